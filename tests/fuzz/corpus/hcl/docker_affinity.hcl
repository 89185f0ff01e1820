// A docker nvidia-smi batch job with an affinity on the GPU model.
job "gpu-test" {
  datacenters = ["dc1"]
  type = "batch"
  group "smi" {
    task "smi" {
      driver = "docker"
      config {
        image   = "nvidia/cuda:11.0-base"
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
