job "gpu-test" {
  datacenters = ["dc1"]
  type        = "batch"

  group "smi" {
    task "smi" {
      driver = "raw_exec"

      config {
        command = "/bin/bash"
        args    = ["${NOMAD_TASK_DIR}/start.sh"]
      }

      template {
        destination = "local/start.sh"
        perms       = "755"
        data        = <<-EOH
          #!/bin/bash
          echo "GPU: ${attr.kernel.name}"
          nvidia-smi -L
        EOH
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
