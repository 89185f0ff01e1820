# A MIG request: one MIG instance of profile 1g.10gb on an A100 or H100.
job "notebook" {
  type = "service"

  group "notebook" {
    network {
      port "ui" {
        to = 8888
      }
    }

    task "jupyter" {
      driver = "raw_exec"

      config {
        command = "/opt/conda/bin/jupyter"
        args    = ["lab", "--port", "${NOMAD_PORT_ui}", "--no-browser"]
      }

      resources {
        memory = 4096

        device "nvidia/gpu" {
          count = 1

          constraint {
            attribute = "${device.attr.mig_profile}"
            value     = "1g.10gb"
          }

          constraint {
            attribute = "${device.model}"
            operator  = "regexp"
            value     = "A100|H100"
          }
        }
      }
    }
  }
}
