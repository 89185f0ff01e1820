job "train" {
  type = "batch"
  meta = { owner = "ml", "team.id": "42" }
  group "g" {
    count = 1
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }
    network {
      port "http" { to = 8080 }
    }
    task "deps" {
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      driver = "exec"
      config {
        command = "pip"
        args    = ["install", "-r", "requirements.txt"]
      }
    }
    task "main" {
      driver = "exec"
      artifact {
        source      = "https://example.com/train.tar.gz"
        destination = "local/"
        options { checksum = "sha256:abc" }
      }
      env {
        DATA = "${NOMAD_ALLOC_DIR}/data"
        RATE = "0.001"
      }
      config {
        command = "python3"
        args = [
          "local/train.py",
          "--epochs", "10",
        ]
      }
      resources {
        cpu        = 2000
        memory     = 4096
        memory_max = 8192
        device "nvidia/gpu/A100" {
          compute = 12.5
          memory  = 10240
        }
      }
      kill_timeout = "20s"
      logs {
        max_files     = 3
        max_file_size = 10
      }
    }
    task "copy" {
      lifecycle { hook = "poststop" }
      driver = "raw_exec"
      config {
        command = "cp"
        args    = ["-r", "${NOMAD_ALLOC_DIR}/out", "/results/"]
      }
    }
  }
}
