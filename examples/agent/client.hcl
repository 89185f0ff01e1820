# A herd client on a GPU machine (docs/operations.md, "A cluster" and
# "Installing with systemd").
#   herd agent -config /etc/herd/client.hcl -node gpu-7
data_dir = "/var/lib/herd"
log_level = "info"

client {
  enabled = true
  servers = ["10.0.0.1:4646"]
  node_class = "h100"
  meta {
    rack = "r12"
  }
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}
