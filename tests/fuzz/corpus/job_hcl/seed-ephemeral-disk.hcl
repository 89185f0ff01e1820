job "train" {
  group "sticky" {
    prevent_reschedule_on_lost = true
    ephemeral_disk {
      size   = 2048
      sticky = true
    }
    disconnect {
      lost_after = "1h"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "date >> $HERD_ALLOC_DIR/data/runs; exec sleep 300"]
      }
    }
  }
  group "migrate" {
    ephemeral_disk {
      migrate = true
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
