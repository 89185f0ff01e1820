# A Nomad GPU-guide job, unchanged: raw_exec runs a start script that a
# template writes, on a node with a Tesla T4 (chosen by ${device.model}).
job "gpu-test" {
  datacenters = ["dc1"]
  type        = "batch"

  group "smi" {
    task "smi" {
      driver = "raw_exec"

      template {
        destination = "local/start.sh"
        perms       = "755"
        data        = <<EOH
#!/bin/bash
echo "visible GPUs: ${NVIDIA_VISIBLE_DEVICES}"
nvidia-smi
EOH
      }

      config {
        command = "local/start.sh"
      }

      resources {
        cpu    = 500
        memory = 256

        device "nvidia/gpu" {
          count = 1

          constraint {
            attribute = "${device.model}"
            value     = "Tesla T4"
          }
        }
      }
    }
  }
}
