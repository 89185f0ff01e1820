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
