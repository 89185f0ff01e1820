# A system job: one GPU metrics exporter on every node that has the NVIDIA
# driver, including nodes that join later (a node that goes down loses its
# exporter; back, it gets one again).  It asks no GPU: an exporter reads
# every GPU of its node through NVML (here `nvidia-smi dmon` stands in for
# one such as dcgm-exporter, which would serve port "metrics").  A new
# version rolls one node at a time through a deployment: the next node once
# the replacement is healthy (running 10 s, min_healthy_time's default) and
# has run for stagger; one that fails stops the rollout and auto_revert
# brings the last version that rolled out well back.  A node whose driver
# goes away (re-registered without it) loses its exporter.
job "gpu-metrics-exporter" {
  type     = "system"
  priority = 80

  constraint {
    attribute = "${attr.nvidia.driver_version}"
    operator  = "is_set"
  }

  update {
    max_parallel = 1
    stagger      = "10s"
    auto_revert  = true
  }

  group "exporter" {
    network {
      port "metrics" {
        static = 9400
      }
    }

    task "dcgm-exporter" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "exec nvidia-smi dmon -s pucm -d 10 || exec sleep infinity"]
      }

      resources {
        cpu    = 100
        memory = 128
      }
    }
  }
}
