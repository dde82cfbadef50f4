#include "cpu/attention_backward.h"

#include "core/saturating.h"

namespace attnprof::cpu {
namespace {

std::int64_t round_up(std::int64_t x, std::int64_t m) { return sat_mul(sat_add(x, m - 1) / m, m); }

// Reserves n floats at `cursor`, 64-byte aligned; returns their offset.
std::int64_t take(std::int64_t& cursor, std::int64_t n) {
  const std::int64_t at = cursor;
  cursor = sat_add(cursor, round_up(n, 16));  // 16 floats: 64 bytes
  return at;
}

}  // namespace

namespace detail {
BackwardLayout backward_layout(const BackwardProblem& problem, const BackwardTiles& tiles, int threads) {
  const FusedProblem& p = problem.forward;
  BackwardLayout l;
  l.group = p.heads / p.kv_heads;
  l.br = tiles.block_q;
  l.bc = tiles.block_k;
  l.dv = round_up(p.head_dim, 16);
  l.bcp = round_up(l.bc, 16);
  l.q_blocks = (p.seq_q + l.br - 1) / l.br;
  l.k_blocks = (p.seq_k + l.bc - 1) / l.bc;
  std::int64_t shared = 0;
  const std::int64_t rows = sat_product({p.batch, p.heads, p.seq_q});
  l.off_delta = take(shared, rows);
  l.off_lse = take(shared, rows);
  l.shared_floats = shared;
  std::int64_t mine = 0;
  l.off_k = take(mine, l.bc * l.dv);
  l.off_kt = take(mine, l.dv * l.bcp);
  l.off_vt = take(mine, l.dv * l.bcp);
  l.off_dk = take(mine, l.bc * l.dv);
  l.off_dv = take(mine, l.bc * l.dv);
  l.off_q = take(mine, l.br * l.dv);
  l.off_do = take(mine, l.br * l.dv);
  l.off_s = take(mine, l.br * l.bcp);
  l.off_dp = take(mine, l.br * l.bcp);
  l.off_rows = take(mine, 2 * l.dv);
  l.off_dq = take(mine, sat_product({l.group, p.seq_q, l.dv}));
  l.per_thread_floats = mine;
  l.group_per_thread = threads <= 1 || p.batch * p.kv_heads >= 2 * static_cast<std::int64_t>(threads);
  return l;
}
}  // namespace detail

Isa backward_isa(Isa isa) { return isa == Isa::portable ? Isa::portable : Isa::avx512; }

BackwardWorkspace backward_workspace(const BackwardProblem& problem, const BackwardTiles& tiles, int threads) {
  const detail::BackwardLayout l = detail::backward_layout(problem, tiles, threads);
  return {sat_mul(l.shared_floats, 4), sat_mul(l.per_thread_floats, 4)};
}

void attention_backward(const BackwardProblem& problem, const BackwardTiles& tiles, Isa isa, void* shared,
                        void* scratch, int threads) {
  if (backward_isa(isa) == Isa::avx512) {
    detail::attention_backward_avx512(problem, tiles, shared, scratch, threads);
  } else {
    detail::attention_backward_portable(problem, tiles, shared, scratch, threads);
  }
}

}  // namespace attnprof::cpu
