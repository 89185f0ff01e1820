# Agent configuration: share GPUs (docs/gpu-sharing.md).
#   herd agent -dev -config examples/agent/gpu-sharing.hcl -gpu-sim examples/gpus/t4-2x.json
gpu {
  # every GPU: MPS, at most 8 allocations at once
  sharing  = "mps"
  replicas = 8
  mps_control = "/usr/bin/nvidia-cuda-mps-control"

  # GPU 1 by NVML index: time-sliced (visibility only, no limits)
  device "1" {
    sharing  = "timeslice"
    replicas = 4
  }

  # by model: every A100 whole (its MIG instances are always exclusive)
  device "NVIDIA A100-SXM4-80GB" {
    sharing = "exclusive"
  }
}
