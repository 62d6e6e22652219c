"""Run the project's Ansible playbooks through ansible-runner and return typed results."""

from provision.ansible.models import Change, Failure, HostStats, PlayResult, ProgressEvent, RunOptions
from provision.ansible.runner import run_playbook

__all__ = ["Change", "Failure", "HostStats", "PlayResult", "ProgressEvent", "RunOptions", "run_playbook"]
