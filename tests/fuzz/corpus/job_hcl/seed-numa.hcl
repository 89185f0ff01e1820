job "train" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      resources {
        cores  = 8
        memory = 1024
        device "nvidia/gpu" { count = 2 }
        numa {
          affinity = "require"
          devices  = ["nvidia/gpu"]
        }
      }
    }
  }
}
