# A herd server (docs/operations.md, "A cluster" and "Installing with systemd").
#   herd agent -config /etc/herd/server.hcl
data_dir  = "/var/lib/herd"
bind_addr = "0.0.0.0"
log_level = "info"

server {
  enabled = true
  # a client that misses its heartbeats this long is down; its
  # allocations are placed elsewhere
  heartbeat_ttl = "10s"
}

# Every API call needs a token once this is on; `herd acl bootstrap` once
# gives the first (management) token (docs/teams.md, "ACL").
acl {
  enabled = true
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
