job "roam" {
  group "desk" {
    count = 2
    disconnect {
      lost_after = "6h"
      replace    = true
      reconcile  = "longest_running"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
    }
  }
  group "laptop" {
    disconnect {
      stop_on_client_after = "1h"
      replace              = false
      reconcile            = "keep_original"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
  group "legacy" {
    max_client_disconnect = "20s"
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
  group "legacy_stop" {
    stop_after_client_disconnect = "90s"
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
