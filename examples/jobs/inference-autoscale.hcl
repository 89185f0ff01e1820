# An inference service that holds as many GPUs as its load needs: herd's
# autoscaler keeps the mean GPU utilization of its allocations near 70%,
# between 1 and 8 of them (docs/jobspec.md, "scaling").  `herd job status
# infer` shows what it sees and what it changed.
job "infer" {
  group "api" {
    count = 2
    scaling {
      min = 1
      max = 8
      policy {
        gpu_utilization = 70
        window          = "2m"
        cooldown        = "5m"
      }
    }
    network {
      port "http" {}
    }
    service {
      name = "infer"
      port = "http"
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/opt/venv/bin/python"
        args    = ["-m", "serve", "--port", "${NOMAD_PORT_http}"]
      }
      resources {
        cpu    = 2000
        memory = "16 GiB"
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
