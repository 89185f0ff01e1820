# An MLflow tracking server registered in herd's service registry, with an
# HTTP health check; `herd service info mlflow` says where it runs.
job "mlflow" {
  group "tracking" {
    network {
      port "http" {}
    }
    service {
      name = "mlflow"
      port = "http"
      tags = ["tracking", "${NOMAD_JOB_NAME}"]
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
      check_restart {
        limit = 3
        grace = "60s"
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/opt/venv/bin/mlflow"
        args    = ["server", "--host", "0.0.0.0", "--port", "${NOMAD_PORT_http}",
                   "--backend-store-uri", "${NOMAD_ALLOC_DIR}/data/mlruns"]
      }
      resources {
        cpu    = 500
        memory = 1024
      }
    }
  }
}
