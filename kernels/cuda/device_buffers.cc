#include "kernels/cuda/device_buffers.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/generate.h"
#include "kernels/run_buffers.h"

namespace gpubench::cuda {

absl::Status PlacedBuffer::Allocate(Placement placement, size_t bytes, int device, int run_device,
                                    size_t placement_pad_bytes) {
  placement_ = placement;
  bytes_ = bytes;
  const size_t size = std::max<size_t>(bytes, 256);
  cudaError_t e = cudaSuccess;
  switch (placement) {
    case Placement::kDevice:
    case Placement::kPeerDevice:
      e = cudaSetDevice(device);
      if (e == cudaSuccess) {
        const size_t pad =
            size >= static_cast<size_t>(kPlacementPadMinBytes) ? placement_pad_bytes : 0;
        e = cudaMalloc(&data_, size + pad);
      }
      owner_ = device;
      break;
    case Placement::kHostPinned:
      e = cudaHostAlloc(&data_, size, cudaHostAllocPortable);
      break;
    case Placement::kHostPageable:
      data_ = std::aligned_alloc(256, (size + 255) / 256 * 256);
      if (data_ == nullptr) e = cudaErrorMemoryAllocation;
      break;
  }
  cudaSetDevice(run_device);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it
    data_ = nullptr;
    return absl::ResourceExhaustedError(
        absl::StrCat("allocation of ", bytes, " bytes ",
                     on_host() ? "of host memory" : absl::StrCat("on device ", device),
                     " failed: out of memory"));
  }
  CUDA_RETURN_IF_ERROR(e);
  return absl::OkStatus();
}

void PlacedBuffer::Free() {
  if (data_ == nullptr) return;
  switch (placement_) {
    case Placement::kDevice:
    case Placement::kPeerDevice:
      cudaFree(data_);
      break;
    case Placement::kHostPinned:
      cudaFreeHost(data_);
      break;
    case Placement::kHostPageable:
      std::free(data_);
      break;
  }
  data_ = nullptr;
}

RunBuffers::RunBuffers(int device, const KernelVariant& variant, const HostData& data)
    : device_(device),
      variant_(variant),
      data_(data),
      key_(BufferKeyOf(variant, data.shape, device, data.peer_device, data.placement_pad_bytes,
                       data.placements)),
      buffers_(BuffersOfRun(data, device)) {
  const KernelFamily& family = *variant.family;
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    buffers_.elements[i] = BufferElements(family.buffers[i], data.shape);
  }
}

absl::Status RunBuffers::Allocate(cudaStream_t stream, std::optional<Allocations> kept) {
  if (NeedsPeerDevice(*variant_.family)) RETURN_IF_ERROR(EnablePeerAccess());
  if (kept.has_value()) {
    // The same placements, pads and bytes (key()): only the contents are this run's to make.
    copies_ = *std::move(kept);
    reused_ = true;
    for (const std::vector<std::unique_ptr<PlacedBuffer>>& copy : copies_) {
      RETURN_IF_ERROR(FillInputs(stream, copy));
    }
  } else {
    // Placements: each copy its own allocation of every buffer. The engine admits more than one
    // only for families whose buffers are all on the run's device and that keep no launch state.
    copies_.resize(static_cast<size_t>(std::max(data_.placements, 1)));
    for (std::vector<std::unique_ptr<PlacedBuffer>>& copy : copies_) {
      RETURN_IF_ERROR(AllocateCopy(stream, &copy));
    }
  }
  // Every copy's outputs and in-outs start as ResetOutputs sets them; copy 0 stays selected.
  for (size_t copy = copies(); copy-- > 0;) {
    Select(copy);
    RETURN_IF_ERROR(ResetOutputs(stream));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

void RunBuffers::Select(size_t copy) {
  selected_ = copy;
  const std::vector<std::unique_ptr<PlacedBuffer>>& buffers = copies_[copy];
  for (size_t i = 0; i < buffers.size(); ++i) buffers_.data[i] = buffers[i]->data();
}

absl::Status RunBuffers::AllocateCopy(cudaStream_t stream,
                                      std::vector<std::unique_ptr<PlacedBuffer>>* copy) {
  const KernelFamily& family = *variant_.family;
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    const BufferSpec& spec = family.buffers[i];
    const int owner = spec.placement == Placement::kPeerDevice ? data_.peer_device : device_;
    auto buffer = std::make_unique<PlacedBuffer>();
    const int64_t bytes = BufferBytes(variant_, data_.shape, static_cast<int>(i));
    RETURN_IF_ERROR(buffer->Allocate(spec.placement, static_cast<size_t>(bytes), owner, device_,
                                     static_cast<size_t>(data_.placement_pad_bytes)));
    copy->push_back(std::move(buffer));
  }
  return FillInputs(stream, *copy);
}

absl::Status RunBuffers::FillInputs(cudaStream_t stream,
                                    const std::vector<std::unique_ptr<PlacedBuffer>>& copy) {
  const KernelFamily& family = *variant_.family;
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    if (family.buffers[i].role == BufferRole::kInput) {
      RETURN_IF_ERROR(Fill(static_cast<int>(i), copy[i]->data(), stream, /*async=*/false));
    }
  }
  return absl::OkStatus();
}

// Buffer `buffer`'s generated contents into `data` (one copy's allocation of it): on the device
// where GeneratedOnDevice (no host generation or upload; a 1 GiB input takes milliseconds), else
// copied from the host's. On `stream`; `async` false waits for it.
absl::Status RunBuffers::Fill(int buffer, void* data, cudaStream_t stream, bool async) {
  const BufferSpec& spec = variant_.family->buffers[buffer];
  const int64_t bytes = BufferBytes(variant_, data_.shape, buffer);
  if (GeneratedOnDevice(spec)) {
    CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(
        LaunchGenerateUniform(BufferDType(spec, variant_.dtype), data_.seed, spec.seed_stream,
                              BufferElements(spec, data_.shape), data, stream)));
    if (!async) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  } else if (async) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(data, data_.buffers[buffer].data(),
                                         static_cast<size_t>(bytes), cudaMemcpyDefault, stream));
  } else {
    CUDA_RETURN_IF_ERROR(cudaMemcpy(data, data_.buffers[buffer].data(), static_cast<size_t>(bytes),
                                    cudaMemcpyDefault));
  }
  return absl::OkStatus();
}

// Peer buffers: access in both directions where the devices allow it (an SM-driven copy needs
// it; copy-engine copies work either way). Already enabled is fine.
absl::Status RunBuffers::EnablePeerAccess() {
  if (data_.peer_device < 0 || data_.peer_device == device_) {
    return absl::FailedPreconditionError(
        absl::StrCat(variant_.name, " needs a second (peer) device"));
  }
  const std::pair<int, int> directions[] = {{device_, data_.peer_device},
                                            {data_.peer_device, device_}};
  for (const auto& [from, to] : directions) {
    int can = 0;
    CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, from, to));
    if (can == 0) continue;
    CUDA_RETURN_IF_ERROR(cudaSetDevice(from));
    const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // not sticky: clear it
    } else if (e != cudaSuccess) {
      cudaSetDevice(device_);
      CUDA_RETURN_IF_ERROR(e);
    }
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return absl::OkStatus();
}

absl::Status RunBuffers::ReadVerified(cudaStream_t stream, BufferContents* out) {
  const std::vector<std::unique_ptr<PlacedBuffer>>& buffers = copies_[selected_];
  out->assign(buffers.size(), {});
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!IsVerified(variant_.family->buffers[i])) continue;
    (*out)[i].resize(buffers[i]->bytes());
    // cudaMemcpyDefault: unified addressing finds each buffer, wherever it is placed.
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync((*out)[i].data(), buffers_.data[i], buffers[i]->bytes(),
                                         cudaMemcpyDefault, stream));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

absl::Status RunBuffers::ResetOutputs(cudaStream_t stream) {
  const std::vector<std::unique_ptr<PlacedBuffer>>& buffers = copies_[selected_];
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferRole role = variant_.family->buffers[i].role;
    const PlacedBuffer& b = *buffers[i];
    if (role == BufferRole::kInOut) {
      RETURN_IF_ERROR(Fill(static_cast<int>(i), b.data(), stream, /*async=*/true));
    } else if (role == BufferRole::kOutput) {
      if (b.on_host()) {
        CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // no launch still writes it
        std::memset(b.data(), 0xff, b.bytes());
      } else if (b.owner() == device_) {
        CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.data(), 0xff, b.bytes(), stream));
      } else {  // the peer's memory: set it from its own device, synchronously
        CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
        CUDA_RETURN_IF_ERROR(cudaSetDevice(b.owner()));
        // cudaMemset may return before the fill is done (it is asynchronous to the host for
        // device memory): without the wait, a push kernel on this run's stream raced the fill
        // and 0.02-0.3% of its stores were overwritten with NaN (H200 x2, 2026-11-30).
        cudaError_t e = cudaMemset(b.data(), 0xff, b.bytes());
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        cudaSetDevice(device_);
        CUDA_RETURN_IF_ERROR(e);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RunBuffers::Regenerate(uint64_t seed, cudaStream_t stream) {
  const std::vector<std::unique_ptr<PlacedBuffer>>& buffers = copies_[selected_];
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferSpec& spec = variant_.family->buffers[i];
    if (spec.role == BufferRole::kOutput) continue;
    if (!GeneratedOnDevice(spec)) {
      return absl::FailedPreconditionError(
          absl::StrCat(variant_.name, ": buffer ", spec.name,
                       " is not generated on the device, so it cannot be given fresh inputs"));
    }
    CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(
        LaunchGenerateUniform(BufferDType(spec, variant_.dtype), seed, spec.seed_stream,
                              BufferElements(spec, data_.shape), buffers[i]->data(), stream)));
  }
  return absl::OkStatus();
}

}  // namespace gpubench::cuda
