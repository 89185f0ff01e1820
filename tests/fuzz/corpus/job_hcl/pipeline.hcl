# A prestart/poststop pipeline: fetch the data set before the main task,
# upload the results after it, keep a log shipper alongside (a sidecar).
job "nightly-eval" {
  type = "batch"

  group "eval" {
    task "fetch" {
      lifecycle {
        hook = "prestart"
      }
      driver = "raw_exec"
      config {
        command = "/usr/bin/rsync"
        args    = ["-a", "data:/sets/eval/", "${NOMAD_ALLOC_DIR}/data/"]
      }
    }

    task "ship-logs" {
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      driver = "raw_exec"
      config {
        command = "/usr/local/bin/ship"
        args    = ["${NOMAD_ALLOC_DIR}/logs"]
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }

    task "eval" {
      driver = "raw_exec"
      config {
        command = "/opt/eval/run"
        args    = ["--data", "${NOMAD_ALLOC_DIR}/data", "--out", "${NOMAD_ALLOC_DIR}/out"]
      }
      resources {
        device "nvidia/gpu" {
          count = 1
        }
      }
    }

    task "upload" {
      lifecycle {
        hook = "poststop"
      }
      driver = "raw_exec"
      config {
        command = "/usr/bin/rsync"
        args    = ["-a", "${NOMAD_ALLOC_DIR}/out/", "results:/eval/${NOMAD_JOB_ID}/"]
      }
    }
  }
}
