# A service with a port: an inference server on a fixed host port 8080,
# restarted on failure, on Linux nodes only.
job "inference" {
  type        = "service"
  datacenters = ["dc1", "dc2"]

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  group "api" {
    count = 2

    network {
      port "http" {
        static = 8080
        to     = 8000
      }
      port "metrics" {}
    }

    task "server" {
      driver = "exec"
      user   = "nobody"

      config {
        command = "/usr/local/bin/serve"
        args    = ["--port", "${NOMAD_PORT_http}", "--metrics", "${NOMAD_PORT_metrics}"]
      }

      template {
        destination = "local/server.toml"
        change_mode = "signal"
        change_signal = "SIGHUP"
        data = <<-EOT
          model = "/models/current"
          batch = 16
        EOT
      }

      resources {
        cpu        = 1000
        memory     = 2048
        memory_max = 4096

        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
