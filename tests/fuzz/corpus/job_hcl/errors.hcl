job "bad job" {
  type = "system"
  priority = 500
  update {
    stagger = "10s"
  }
  group "g" {
    count = -1
    flavour = "x"
    task "t" {
      resources {
        device "nvidia/gpu" {
          count = 2
          memory = "4 GiB"
        }
      }
      lifecycle { hook = "whenever" }
    }
    task "u" {
      driver = "docker"
      config { image = "x" }
      resources { cpu = 100 }
      resources { cpu = 200 }
    }
  }
}
