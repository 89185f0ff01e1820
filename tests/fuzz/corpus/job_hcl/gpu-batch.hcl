# A GPU batch job: four copies of a training run, two whole GPUs each, on
# GPUs with at least 40 GiB of memory.
job "resnet-train" {
  type     = "batch"
  priority = 70

  meta {
    team = "vision"
  }

  group "train" {
    count = 4

    restart {
      attempts = 1
      delay    = "30s"
      mode     = "fail"
    }

    task "train" {
      driver = "raw_exec"

      config {
        command = "/opt/venv/bin/python"
        args    = ["train.py", "--epochs", "90", "--rank", "${NOMAD_ALLOC_INDEX}"]
      }

      env {
        NCCL_DEBUG = "WARN"
      }

      resources {
        cpu    = 8000
        memory = "32 GiB"

        device "nvidia/gpu" {
          count = 2

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }
        }
      }

      kill_timeout = "2m"

      logs {
        max_files     = 5
        max_file_size = 50
      }
    }
  }
}
