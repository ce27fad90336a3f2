// The rows a subgroup decode kernel (mul_mat_sg.comp, mul_mat_sgk.comp) computes. mul_mat: up
// to MT = 4 activation rows against weight rows of group x + y * groups_x (the host's 2D
// split of N / R). ID (mul_mat_id): one (token, expert) pair per workgroup row y, its expert's
// matrix and its activation row, MT = 1; an expert id outside [0, E) makes its outputs NaN, as
// the plain kernel does (ids are computed on the device: the host cannot check them first).
#ifdef ID
layout(push_constant, std430) uniform Pc { PcMulMatId p; } pc;
const uint MT = 1u;
#else
layout(push_constant, std430) uniform Pc { PcMulMat p; } pc;
const uint MT = 4u;  // activation rows at most (the host uses these variants for M <= 4)
#endif

struct SgRows {
    addr_t w, act;  // weight matrix, first activation row
    uint group, mc, dst_row;
    bool bad;
};

SgRows sg_rows() {
    SgRows s;
#ifdef ID
    const uint pair = gl_WorkGroupID.y;
    const int e = I32(pc.p.ids).v[pair];
    s.bad = e < 0 || uint(e) >= pc.p.E;
    s.w = addr_mad(pc.p.w, s.bad ? 0u : uint(e), pc.p.w_nb2);
    s.act = addr_mad(pc.p.act, pair / pc.p.k * pc.p.X + (pc.p.X == 1u ? 0u : pair % pc.p.k), pc.p.act_nb1);
    s.group = gl_WorkGroupID.x;
    s.mc = 1u;
    s.dst_row = pair;
#else
    s.bad = false;
    s.w = pc.p.w;
    s.act = pc.p.act;
    s.group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    s.mc = min(MT, pc.p.M);
    s.dst_row = 0u;
#endif
    return s;
}
