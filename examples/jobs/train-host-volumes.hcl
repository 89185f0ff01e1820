# A training run that reads its dataset from the node's NVMe and writes
# checkpoints to shared storage, both offered by the client as host volumes:
#
#   client {
#     host_volume "datasets"    { path = "/nvme/datasets"   read_only = true }
#     host_volume "checkpoints" { path = "/mnt/shared/ckpt" }
#   }
#
# The group lands only on nodes with both (checkpoints writable). The trainer
# is the leader: when it ends, the metrics exporter beside it is stopped and
# the allocation ends with the trainer's outcome.
job "resnet-train-ckpt" {
  type = "batch"

  group "train" {
    volume "data" {
      type      = "host"
      source    = "datasets"
      read_only = true
    }

    volume "ckpt" {
      type   = "host"
      source = "checkpoints"
    }

    task "train" {
      driver = "exec"
      leader = true

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      volume_mount {
        volume      = "ckpt"
        destination = "/ckpt"
      }

      config {
        command = "/opt/venv/bin/python"
        args    = ["train.py", "--data", "/data/imagenet", "--checkpoints", "${HERD_VOLUME_CKPT}"]
      }

      resources {
        memory = "32 GiB"
        device "nvidia/gpu" {
          count = 1
        }
      }
    }

    task "metrics" {
      driver = "exec"

      volume_mount {
        volume      = "ckpt"
        destination = "/ckpt"
        read_only   = true
      }

      config {
        command = "/opt/venv/bin/python"
        args    = ["export_metrics.py", "--watch", "/ckpt"]
      }
    }
  }
}
