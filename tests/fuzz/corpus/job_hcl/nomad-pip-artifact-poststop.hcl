# A Nomad GPU-guide style pipeline: a prestart task installs Python packages
# with pip, the main task runs a script fetched by artifact, and a poststop
# task copies the results out of the shared allocation directory.
job "train-model" {
  datacenters = ["dc1"]
  type        = "batch"

  group "train" {
    task "install" {
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }

      driver = "raw_exec"

      config {
        command = "pip3"
        args    = ["install", "--target", "${NOMAD_ALLOC_DIR}/pylib", "numpy"]
      }
    }

    task "train" {
      driver = "raw_exec"

      artifact {
        source      = "https://example.com/ml/train.py"
        destination = "local/"
      }

      env {
        PYTHONPATH = "${NOMAD_ALLOC_DIR}/pylib"
      }

      config {
        command = "python3"
        args    = ["local/train.py", "--output", "${NOMAD_ALLOC_DIR}/results"]
      }

      resources {
        cpu    = 2000
        memory = 4096

        device "nvidia/gpu" {
          count = 1
        }
      }
    }

    task "collect" {
      lifecycle {
        hook = "poststop"
      }

      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "cp -r ${NOMAD_ALLOC_DIR}/results /srv/results/${NOMAD_JOB_NAME}"]
      }
    }
  }
}
