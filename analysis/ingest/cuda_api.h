// What CUDA API and copy names mean, shared by the profile readers: the launch and sync
// calls that carry a cost, and the display name of a copy.
#pragma once

#include <string_view>

#include "analysis/model/profile.h"

namespace sightline::ingest {

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
inline std::string_view stripVersion(std::string_view name) {
  auto v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

inline model::SyncKind syncKindOf(std::string_view n) {
  if (n == "cudaDeviceSynchronize" || n == "cudaThreadSynchronize" || n == "cuCtxSynchronize")
    return model::SyncKind::Device;
  if (n == "cudaStreamSynchronize" || n == "cuStreamSynchronize") return model::SyncKind::Stream;
  if (n == "cudaEventSynchronize" || n == "cuEventSynchronize") return model::SyncKind::Event;
  if (n == "cudaMemcpy" || n == "cudaMemcpy2D" || n == "cudaMemcpy3D" || n == "cuMemcpyHtoD" || n == "cuMemcpyDtoH" ||
      n == "cuMemcpy" || n == "cudaMemcpyToSymbol" || n == "cudaMemcpyFromSymbol")
    return model::SyncKind::BlockingMemcpy;
  return model::SyncKind::None;
}

inline bool launchesWork(std::string_view n) {
  return n.find("Launch") != std::string_view::npos || n.find("Memcpy") != std::string_view::npos ||
         n.find("Memset") != std::string_view::npos;
}

inline const char* copyName(model::CopyKind k) {
  switch (k) {
    case model::CopyKind::HostToDevice:
      return "[memcpy HtoD]";
    case model::CopyKind::DeviceToHost:
      return "[memcpy DtoH]";
    case model::CopyKind::DeviceToDevice:
      return "[memcpy DtoD]";
    case model::CopyKind::HostToHost:
      return "[memcpy HtoH]";
    case model::CopyKind::PeerToPeer:
      return "[memcpy PtoP]";
    default:
      return "[memcpy]";
  }
}

}  // namespace sightline::ingest
