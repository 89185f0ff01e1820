job "web" {
  type = "service"
  update {
    max_parallel     = 2
    min_healthy_time = "5s"
    healthy_deadline = "2m"
    auto_revert      = true
  }
  spread {
    attribute = "${node.datacenter}"
    weight    = 70
    target "dc1" { percent = 60 }
    target "dc2" { percent = 40 }
  }
  group "api" {
    count = 4
    update {
      max_parallel = 1
      health_check = "task_states"
    }
    spread { attribute = "${meta.rack}" }
    task "serve" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}
