# The first job to run on `herd agent -dev`: one GPU, a shell that says
# which GPU it was given.  Runs anywhere (simulated GPUs included).
job "hello-gpu" {
  type = "batch"

  group "hello" {
    task "hello" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"task ${NOMAD_TASK_NAME} of ${NOMAD_JOB_ID} sees CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\"; sleep 2"]
      }

      resources {
        cpu    = 100
        memory = 64

        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
