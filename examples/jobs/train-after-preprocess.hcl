# The second step of a pipeline: train once the "preprocess" job (register
# it first) has completed; a failed preprocess stops this job with the
# reason instead of leaving it waiting. Register evaluate-style jobs the same
# way with depends_on { job = "train" }.
job "train" {
  type = "batch"

  depends_on {
    job       = "preprocess"
    condition = "complete"
  }

  group "train" {
    task "train" {
      driver = "raw_exec"
      config {
        command = "/opt/train/run"
        args    = ["--data", "/shared/preprocessed", "--out", "/shared/model"]
      }
      resources {
        cpu    = 4000
        memory = 16384
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
