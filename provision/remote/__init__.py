"""SSH work outside Ansible, carried by Fabric: wait for SSH, run commands in parallel, collect bundles."""
