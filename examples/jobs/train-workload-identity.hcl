# A training job that proves who it is: its default identity reads the
# job's own variables in herd (nomad/jobs/train-wi: the run's settings), and
# a named identity, "storage", is a signed token for the object store's
# OIDC federation (its audience), renewed every 30 minutes in
# secrets/herd_token_storage while the job runs.  The store checks it with
# the keys at <issuer>/.well-known/jwks.json (docs/teams.md, "Workload
# identity").
job "train-wi" {
  type = "batch"
  group "train" {
    task "train" {
      driver = "raw_exec"
      config {
        command = "/opt/venv/bin/python"
        args    = ["train.py", "--checkpoints", "s3://checkpoints/${NOMAD_JOB_ID}",
                   "--web-identity-token-file", "${NOMAD_SECRETS_DIR}/herd_token_storage"]
      }
      identity {
        env = true
      }
      identity "storage" {
        aud  = ["sts.storage.example.internal"]
        file = true
        ttl  = "1h"
      }
      resources {
        memory = "16 GiB"
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
