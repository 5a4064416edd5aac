// Knowledge about PyTorch names shared by the index walk and the index queries: which callees
// make tensors, modules, loaders and optimizers. Internal to analysis/source.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::source {

// `torch.nn.Linear`, `torch.nn.Module`, `torch.nn.parallel.DistributedDataParallel`, ...
bool isTorchModuleClass(const std::string& resolved);
// The kind a resolved callee returns when called: torch factories give tensors, DataLoader a
// loader, torch.optim.* an optimizer, torch.device a device, nn classes a module.
ValueKind kindOfResolvedCallee(const std::string& resolved);
ValueKind kindOfTypeAnnotation(const std::string& resolved);
// Module methods that return the module itself (`model.to(device)`, `model.eval()`).
bool returnsModule(const std::string& method);
// Tensor methods whose result is a tensor (everything but item/tolist/size/...).
bool tensorMethodReturnsTensor(const std::string& method);

// What one walk learns for the next: functions returning tensors (by qualified name), the
// positional arguments that are tensors at calls of plain or `self.` callees, and the
// parameters those calls make tensors.
struct WalkKnowledge {
  std::set<std::string> tensor_functions;
  std::map<std::string, std::set<size_t>> tensor_arguments;        // callee text -> positions
  std::map<std::string, std::set<std::string>> tensor_parameters;  // qualified function -> names
  friend bool operator==(const WalkKnowledge&, const WalkKnowledge&) = default;
  void merge(const WalkKnowledge& other);
};

// Sets `mark`'s vector sizes to those of `index` now.
void recordSizes(const SourceIndex& index, ChunkMark& mark);

// Walks chunks [first, file.treeCount()) of the file into `index`, which holds what the chunks
// before `first` gave (and blocks[0], the module). Appends a ChunkMark per chunk walked. After
// each chunk, `go_on(chunk)` may stop the walk (returns false).
void walkChunks(const SourceFile& file, SourceIndex& index, const WalkKnowledge& known, size_t first,
                const std::function<bool(size_t chunk)>& go_on);

}  // namespace sightline::source
