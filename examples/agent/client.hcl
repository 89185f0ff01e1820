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

# https for the API and between agents, with a certificate for this machine
# signed by the cluster's CA (docs/operations.md, "TLS"); the CLI then needs
# HERD_ADDR=https://... and HERD_CACERT (and HERD_CLIENT_CERT/KEY with
# verify_https_client).
# tls {
#   http                = true
#   ca_file             = "/etc/herd/tls/ca.pem"
#   cert_file           = "/etc/herd/tls/agent.pem"
#   key_file            = "/etc/herd/tls/agent-key.pem"
#   verify_https_client = true
# }
