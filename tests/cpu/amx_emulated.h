#pragma once
// The AMX Policy of the fused attention (src/cpu/policy_amx.h) on emulated tile registers: the
// same driver, Policy and micro-kernel code as attention_amx.cpp, with each tile instruction
// carried out by scalar code that enforces the instruction's shape rules. It checks the packing,
// padding, blocking and thread set-up of the AMX path on CPUs without AMX (it needs
// AVX512_BF16 for the rest of the Policy: check cpu::detected_isa() first).
#include "cpu/fused_attention.h"

namespace attnprof::cpu::emulated {

FusedWorkspace amx_workspace(const FusedProblem& problem, const TileConfig& config, int threads);
void amx_fused_attention(const FusedProblem& problem, const TileConfig& config, void* prepack, void* scratch,
                         int threads);

}  // namespace attnprof::cpu::emulated
