# A Nomad GPU-guide job, unchanged: a docker batch job that runs nvidia-smi
# and prefers one GPU model through an affinity.
job "gpu-test" {
  datacenters = ["dc1"]
  type        = "batch"

  group "smi" {
    task "smi" {
      driver = "docker"

      config {
        image   = "nvidia/cuda:12.2.0-base-ubuntu22.04"
        command = "nvidia-smi"
      }

      resources {
        device "nvidia/gpu" {
          count = 1

          # Add an affinity for a particular model
          affinity {
            attribute = "${device.model}"
            value     = "Tesla K80"
            weight    = 50
          }
        }
      }
    }
  }
}
