job "web" {
  update {
    max_parallel = 1
    canary       = 1
    health_check = "checks"
  }
  group "g" {
    network { port "http" {} }
    service {
      port        = "http"
      tags        = ["live", "${NOMAD_ALLOC_INDEX}"]
      canary_tags = ["canary"]
      meta { v = "1" }
      canary_meta { v = "2" }
      on_update   = "ignore_warnings"
      check {
        type     = "tcp"
        interval = "1s"
        timeout  = "1s"
      }
      check {
        type      = "script"
        command   = "/bin/true"
        interval  = "1s"
        timeout   = "1s"
        on_update = "ignore"
      }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      service {
        port      = 8080
        on_update = "require_healthy"
        check {
          type          = "tcp"
          interval      = "1s"
          timeout       = "1s"
          on_update     = "ignore_warnings"
          check_restart {
            limit           = 2
            ignore_warnings = true
          }
        }
      }
    }
  }
}
