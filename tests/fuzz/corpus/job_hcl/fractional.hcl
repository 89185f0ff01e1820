# A fractional request: a quarter of one GPU's compute and 6 GiB of its
# memory, on a GPU the agent shares through MPS or time-slicing.
job "small-inference" {
  type = "service"

  group "model" {
    count = 3

    task "serve" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/serve-small"
      }

      resources {
        cpu    = 500
        memory = 1024

        device "nvidia/gpu" {
          count   = 1
          compute = 25
          memory  = "6 GiB"

          affinity {
            attribute = "${device.attr.compute_capability}"
            operator  = ">="
            value     = "8.0"
            weight    = 40
          }
        }
      }
    }
  }
}
