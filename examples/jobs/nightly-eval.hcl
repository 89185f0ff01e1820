# A periodic batch job: the server launches a child job
# ("nightly-eval-periodic-<unix seconds>") at 03:00 UTC every day, and
# skips a launch while the previous night's evaluation still runs.
job "nightly-eval" {
  type = "batch"

  periodic {
    crons            = ["0 3 * * *"]
    prohibit_overlap = true
    time_zone        = "UTC"
  }

  group "eval" {
    task "eval" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo evaluating checkpoint of ${NOMAD_JOB_NAME}"]
      }
      resources {
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
