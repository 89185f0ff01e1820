# Distributed training over four machines with torchrun: a gang of four
# members, eight GPUs each, placed all together or not at all, one per
# machine.  Each member learns its peers from HERD_GANG_* (docs/jobspec.md,
# "Gangs"); rank 0's "rdzv" port is the rendezvous.
job "llm-pretrain" {
  type     = "batch"
  priority = 70

  group "workers" {
    count = 4
    gang  = true
    # a rank that finished does not finish the run: every rank starts
    # over together when the gang restarts
    gang_restart = "all"

    # members on different machines (the gang's nodes are its NCCL ring)
    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    network {
      port "rdzv" {}
    }

    # A member that fails stops the others (a collective cannot go on
    # without a rank); the whole gang is placed again, up to twice a day.
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts       = 2
      interval       = "24h"
      delay          = "30s"
      delay_function = "constant"
      unlimited      = false
    }

    task "rank" {
      driver = "raw_exec"

      config {
        command = "/opt/venv/bin/torchrun"
        args = [
          "--nnodes=${HERD_GANG_SIZE}",
          "--nproc_per_node=8",
          "--node_rank=${HERD_GANG_RANK}",
          "--master_addr=${HERD_GANG_LEADER_IP}",
          "--master_port=${HERD_GANG_LEADER_PORT_rdzv}",
          "train.py",
        ]
      }

      env {
        NCCL_DEBUG = "WARN"
      }

      resources {
        cpu    = 32000
        memory = "256 GiB"

        device "nvidia/gpu" {
          count = 8
        }
      }

      kill_timeout = "2m"
    }
  }
}
