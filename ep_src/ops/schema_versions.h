// ORT matches an open-ended kernel row ([v, latest]) only to nodes whose schema version is exactly v, and a closed
// one [a, b] to any version in it. split_at_schema_versions() turns rows written per range of identical semantics
// into one row per ONNX schema version (the last open-ended), so a model of any opset from 13 to 21 finds its
// kernel. Any device's table can use it (the GPU tables too).
#pragma once

#include <vector>

#include "ort/kernel.h"

namespace fp8ort {

std::vector<KernelDef> split_at_schema_versions(const std::vector<KernelDef>& rows);

}  // namespace fp8ort
