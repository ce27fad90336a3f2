// Compute pipelines, one per shader variant (backends/vulkan/shader_blobs.h), created on
// first use with the device's specialization constants.
#include "backends/vulkan/vk_context.h"

#include <stdexcept>
#include <string>

#include "backends/vulkan/shader_blobs.h"

namespace ls::vk {

VkPipeline Context::pipeline(const std::string& variant) {
    if (auto it = pipelines_.find(variant); it != pipelines_.end()) return it->second;
    VkPipeline p = make_pipeline(variant);
    pipelines_[variant] = p;
    return p;
}

VkPipeline Context::make_pipeline(const std::string& variant) {
    const ShaderBlob* blob = nullptr;
    for (size_t i = 0; i < kShaderBlobCount; ++i)
        if (variant == kShaderBlobs[i].name) blob = &kShaderBlobs[i];
    if (!blob) throw std::logic_error("vulkan: no shader variant '" + variant + "' in this build");
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = blob->n_words * 4;
    smi.pCode = blob->words;
    VkShaderModule mod;
    check(vkCreateShaderModule(dev, &smi, nullptr, &mod), "vkCreateShaderModule");
    VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = mod;
    cpi.stage.pName = "main";
    // constant_id 0: SUBGROUP_SIZE, 1: SUBGROUP_OPS (VK_SUBGROUP_FEATURE_* bits),
    // 2: SHARED_BYTES (shaders/common.glsl); ignored by shaders that do not use them.
    const uint32_t spec[3] = {subgroup_size, subgroup_ops, shared_bytes};
    VkSpecializationMapEntry entries[3];
    for (uint32_t i = 0; i < 3; ++i) entries[i] = {i, 4 * i, 4};
    VkSpecializationInfo si{3, entries, sizeof(spec), spec};
    cpi.stage.pSpecializationInfo = &si;
    cpi.layout = layout;
    VkPipeline p;
    const VkResult r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &p);
    vkDestroyShaderModule(dev, mod, nullptr);
    check(r, ("vkCreateComputePipelines (" + variant + ")").c_str());
    return p;
}
}  // namespace ls::vk
