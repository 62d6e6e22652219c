"""The stand-in apt packages: real names, several real versions each, no real content.

LAB STAND-IN: every package here is an empty shell with the real package's name and version
so that apt pinning, holds, upgrades and downgrades are real apt work on the twins. Packages
that provide a tool install a small entry point that runs the lab's simulated implementation
(installed into the rootfs by `install_tools`); packages with a service ship a real systemd
unit running a tiny daemon.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

DRIVER_VERSIONS = ("550.90.07-1", "550.127.08-1", "550.144.03-1", "560.35.03-1")
RDMA_VERSIONS = ("44.0-2", "48.0-1")
NCCL_VERSIONS = ("2.20.5-1+cuda12.4", "2.21.5-1+cuda12.4", "2.23.4-1+cuda12.6")
CTK_VERSIONS = ("1.16.2-1", "1.17.3-1", "1.17.4-1")
LIBNVC_VERSIONS = CTK_VERSIONS

DOCKER_VERSIONS = ("5:27.3.1-1~debian.12~bookworm", "5:27.4.1-1~debian.12~bookworm")
# The parts of Apptainer's own apptainer.conf and nvliblist.conf that --nv reads (the real files hold more).
APPTAINER_CONF = (
    "# LAB STAND-IN of apptainer.conf ({version})\n"
    "# USE NVIDIA-CONTAINER-CLI: [BOOL]\n# DEFAULT: no\n"
    "# If set to yes, Apptainer will attempt to use nvidia-container-cli to set up GPUs with --nv\n"
    "use nvidia-container-cli = no\n"
)
NVLIBLIST = (
    "# LAB STAND-IN of nvliblist.conf: binaries and libraries --nv binds from the host\n"
    "nvidia-smi\nnvidia-debugdump\nnvidia-persistenced\nlibcuda.so\nlibnvidia-ml.so\n"
)

LAB_TOOLS_DIR = "/usr/lib/provision-lab/tools"
TOOL_HEADER = "# LAB STAND-IN: simulated hardware, not the real tool"


def entry_point(impl: str) -> str:
    """The script installed as a stand-in tool: the shell front (data/tools/front.sh) of `impl`.py."""
    return f"#!/bin/sh\n{TOOL_HEADER}\n_pv_tool={impl}; . {LAB_TOOLS_DIR}/front.sh\n"


class Service(BaseModel):
    """A systemd unit shipped by a stand-in, running a lab daemon."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit: str
    description: str
    daemon: str  # absolute path of the daemon entry point the package installs
    lab_impl: str = ""  # a lab tool to run instead of `sleep infinity` (e.g. the fabric manager)
    restart_on_failure: bool = False
    exec_start: str = ""  # run this (a tool the package ships) instead of installing a daemon script
    enable_on_install: bool = True  # postinst enables and starts it, as Debian's deb-systemd-helper does


class StandIn(BaseModel):
    """One package name with the versions the lab repository carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    versions: tuple[str, ...]
    summary: str
    section: str = "misc"
    depends: str = ""  # "{version}" is replaced by the version being built
    conflicts: str = ""
    tools: dict[str, str] = {}  # installed path -> lab tool module (data/tools/<module>.py)
    services: tuple[Service, ...] = ()
    files: dict[str, str] = {}  # extra files; "{version}"/"{upstream}" are replaced


def upstream(version: str) -> str:
    """Upstream part of a Debian version: no epoch, no revision."""
    v = version.split(":", 1)[-1]
    return v.rsplit("-", 1)[0] if "-" in v else v


_FM = Service(
    unit="nvidia-fabricmanager.service",
    description="NVIDIA fabric manager service (LAB STAND-IN)",
    daemon="/usr/bin/nv-fabricmanager",
    lab_impl="fabricmanager",
    restart_on_failure=True,
)

CATALOG: tuple[StandIn, ...] = (
    StandIn(
        name="nvidia-driver",
        versions=DRIVER_VERSIONS,
        summary="NVIDIA metapackage",
        section="non-free/libs",
        depends="nvidia-kernel-open-dkms (= {version}) | nvidia-kernel-dkms (= {version})",
        tools={"/usr/bin/nvidia-smi": "nvidia_smi"},
    ),
    StandIn(
        name="nvidia-kernel-open-dkms",
        versions=DRIVER_VERSIONS,
        summary="NVIDIA binary kernel module DKMS source (open GPU kernel modules)",
        section="non-free/kernel",
        conflicts="nvidia-kernel-dkms",
        files={"/usr/src/nvidia-{upstream}/LAB-STAND-IN": "open kernel module {upstream}\n"},
    ),
    StandIn(
        name="nvidia-kernel-dkms",
        versions=DRIVER_VERSIONS,
        summary="NVIDIA binary kernel module DKMS source (proprietary)",
        section="non-free/kernel",
        conflicts="nvidia-kernel-open-dkms",
        files={"/usr/src/nvidia-{upstream}/LAB-STAND-IN": "proprietary kernel module {upstream}\n"},
    ),
    StandIn(
        name="nvidia-fabricmanager-550",
        versions=DRIVER_VERSIONS,
        summary="Fabric Manager for NVSwitch based systems",
        section="non-free/utils",
        conflicts="nvidia-fabricmanager-560",
        services=(_FM,),
        files={"/usr/share/nvidia/nvswitch/fabricmanager.cfg": "# LAB STAND-IN\nFABRIC_MODE=0\n"},
    ),
    StandIn(
        name="nvidia-fabricmanager-560",
        versions=("560.35.03-1",),
        summary="Fabric Manager for NVSwitch based systems",
        section="non-free/utils",
        conflicts="nvidia-fabricmanager-550",
        services=(_FM,),
        files={"/usr/share/nvidia/nvswitch/fabricmanager.cfg": "# LAB STAND-IN\nFABRIC_MODE=0\n"},
    ),
    StandIn(
        name="nvidia-persistenced",
        versions=DRIVER_VERSIONS,
        summary="daemon to maintain persistent software state in the NVIDIA driver",
        section="non-free/utils",
        services=(Service(unit="nvidia-persistenced.service", description="NVIDIA Persistence Daemon"
                          " (LAB STAND-IN)", daemon="/usr/bin/nvidia-persistenced"),),
    ),
    *(
        StandIn(
            name=f"cuda-toolkit-{series}",
            versions=versions,
            summary=f"CUDA Toolkit {series.replace('-', '.')} meta-package",
            section="devel",
            files={f"/usr/local/cuda-{series.replace('-', '.')}/version.json":
                   '{{\n   "cuda" : {{\n      "name" : "CUDA SDK",\n      "version" : "{upstream}"\n   }}\n}}\n'},
        )
        for series, versions in (("12-4", ("12.4.0-1", "12.4.1-1")), ("12-6", ("12.6.0-1", "12.6.3-1")))
    ),
    StandIn(
        name="cudnn9-cuda-12",
        versions=("9.1.0.70-1", "9.5.1.17-1", "9.6.0.74-1"),
        summary="NVIDIA cuDNN for CUDA 12",
        section="libs",
    ),
    StandIn(name="libnccl2", versions=NCCL_VERSIONS, summary="NVIDIA Collective Communication Library (NCCL)"
            " Runtime", section="libs"),
    StandIn(name="libnccl-dev", versions=NCCL_VERSIONS, summary="NVIDIA Collective Communication Library"
            " (NCCL) Development Files", section="libdevel", depends="libnccl2 (= {version})"),
    StandIn(
        name="nvidia-container-toolkit",
        versions=CTK_VERSIONS,
        summary="NVIDIA Container toolkit",
        section="utils",
        depends="nvidia-container-toolkit-base (= {version}), libnvidia-container-tools (>= {version}),"
        " libnvidia-container-tools (<< 2.0.0)",
    ),
    StandIn(name="nvidia-container-toolkit-base", versions=CTK_VERSIONS, summary="NVIDIA Container Toolkit"
            " Base", section="utils", tools={"/usr/bin/nvidia-ctk": "nvidia_ctk"}),
    StandIn(name="libnvidia-container-tools", versions=LIBNVC_VERSIONS, summary="NVIDIA container runtime"
            " library (command-line tools)", section="utils", depends="libnvidia-container1 (>= {version})"),
    StandIn(name="libnvidia-container1", versions=LIBNVC_VERSIONS, summary="NVIDIA container runtime library",
            section="libs"),
    StandIn(
        name="datacenter-gpu-manager",
        versions=("1:3.3.7", "1:3.3.9"),
        summary="NVIDIA Datacenter GPU Management Tools",
        section="utils",
        tools={"/usr/bin/dcgmi": "dcgmi"},
        services=(Service(unit="nvidia-dcgm.service", description="NVIDIA DCGM service (LAB STAND-IN)",
                          daemon="/usr/bin/nv-hostengine"),),
    ),
    StandIn(
        name="datacenter-gpu-manager-exporter",
        versions=("3.3.7-3.4.2-1", "3.3.9-3.6.1-1"),
        summary="NVIDIA DCGM exporter for Prometheus",
        section="utils",
        depends="datacenter-gpu-manager",
        services=(Service(unit="nvidia-dcgm-exporter.service", description="NVIDIA DCGM exporter (LAB STAND-IN)",
                          daemon="/usr/bin/dcgm-exporter"),),
    ),
    StandIn(name="rdma-core", versions=RDMA_VERSIONS, summary="RDMA core userspace infrastructure and"
            " documentation", section="net"),
    StandIn(name="ibverbs-utils", versions=RDMA_VERSIONS, summary="Examples for the libibverbs library",
            section="net", tools={"/usr/bin/ibv_devinfo": "ibv_devinfo"}),
    StandIn(name="infiniband-diags", versions=RDMA_VERSIONS, summary="InfiniBand diagnostic programs",
            section="net", tools={"/usr/sbin/ibstat": "ibstat"}),
    StandIn(
        name="zfsutils-linux",
        versions=("2.1.11-1+deb12u1", "2.2.6-1~bpo12+1"),
        summary="command-line tools to manage OpenZFS filesystems",
        section="contrib/admin",
        tools={"/usr/sbin/zpool": "zpool", "/usr/sbin/zfs": "zfs"},
    ),
    StandIn(
        name="zfs-zed",
        versions=("2.1.11-1+deb12u1", "2.2.6-1~bpo12+1"),
        summary="OpenZFS Event Daemon",
        section="contrib/admin",
        depends="zfsutils-linux (= {version})",
        services=(Service(unit="zfs-zed.service", description="ZFS Event Daemon (zed) (LAB STAND-IN)",
                          daemon="/usr/sbin/zed"),),
        files={"/etc/zfs/zed.d/zed.rc": "# LAB STAND-IN: zed.rc as Debian ships it (every setting commented)\n"
               "#ZED_EMAIL_ADDR=\"root\"\n#ZED_NOTIFY_INTERVAL_SECS=3600\n#ZED_NOTIFY_VERBOSE=0\n"},
    ),
    # sanoid: the real package is Perl (libconfig-inifiles-perl, libcapture-tiny-perl, pv, mbuffer, lzop) and the
    # twins see no Debian mirror; this stand-in keeps the real name, version and units (sanoid.timer every 15
    # minutes starting sanoid.service) and runs data/tools/sanoid.py against the simulated ZFS.
    StandIn(
        name="sanoid",
        versions=("2.1.0-1",),
        summary="Policy-driven ZFS snapshot management and replication tools",
        section="contrib/utils",
        depends="zfsutils-linux",
        tools={"/usr/sbin/sanoid": "sanoid"},
        files={
            "/lib/systemd/system/sanoid.service": "[Unit]\nDescription=Snapshot ZFS Pool (LAB STAND-IN)\n"
            "Requires=local-fs.target\nAfter=local-fs.target\n\n[Service]\nType=oneshot\n"
            "Environment=TZ=UTC\nExecStart=/usr/sbin/sanoid --cron --verbose\n",
            "/lib/systemd/system/sanoid.timer": "[Unit]\nDescription=Run Sanoid Every 15 Minutes (LAB STAND-IN)\n"
            "\n[Timer]\nOnCalendar=*:0/15\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n",
        },
    ),
    StandIn(
        name="mdadm",
        versions=("4.2-5",),
        summary="Tool to administer Linux MD arrays (software RAID)",
        section="admin",
        tools={"/usr/sbin/mdadm": "mdadm"},
        # Debian's mdmonitor.service is static (udev starts it when an array appears): not enabled on install
        services=(Service(unit="mdmonitor.service", description="MD array monitor (LAB STAND-IN)",
                          daemon="/usr/sbin/mdadm", exec_start="/usr/sbin/mdadm --monitor --scan",
                          enable_on_install=False),),
    ),
    StandIn(
        name="prometheus-node-exporter",
        versions=("1.5.0-1+b6", "1.6.1-1~bpo12+1"),
        summary="Prometheus exporter for machine metrics",
        section="net",
        services=(Service(unit="prometheus-node-exporter.service", description="Prometheus exporter for"
                          " machine metrics (LAB STAND-IN)", daemon="/usr/bin/prometheus-node-exporter"),),
    ),
    StandIn(
        name="smartmontools",
        versions=("7.3-pre1-1", "7.4-2~bpo12+1"),
        summary="control and monitor storage systems using S.M.A.R.T.",
        section="utils",
        tools={"/usr/sbin/smartctl": "smartctl"},
        services=(Service(unit="smartmontools.service", description="Self Monitoring and Reporting"
                          " Technology (SMART) Daemon (LAB STAND-IN)", daemon="/usr/sbin/smartd"),),
    ),
    StandIn(
        name="chrony",
        versions=("4.3-2+deb12u1",),
        summary="Versatile implementation of the Network Time Protocol",
        section="net",
        services=(Service(unit="chrony.service", description="chrony, an NTP client/server (LAB STAND-IN)",
                          daemon="/usr/sbin/chronyd"),),
    ),
    StandIn(
        name="containerd",
        versions=("1.6.20~ds1-1+b1", "1.6.20~ds1-1+deb12u1"),
        summary="open and reliable container runtime",
        section="admin",
        conflicts="containerd.io",
        services=(Service(unit="containerd.service", description="containerd container runtime"
                          " (LAB STAND-IN)", daemon="/usr/bin/containerd"),),
    ),
    StandIn(
        name="containerd.io",
        versions=("1.7.22-1", "1.7.24-1"),
        summary="An open and reliable container runtime",
        section="devel",
        conflicts="containerd",
        services=(Service(unit="containerd.service", description="containerd container runtime"
                          " (LAB STAND-IN)", daemon="/usr/bin/containerd"),),
    ),
    StandIn(
        name="docker-ce",
        versions=DOCKER_VERSIONS,
        summary="Docker: the open-source application container engine",
        section="admin",
        depends="containerd.io (>= 1.7.22), docker-ce-cli",
        services=(Service(unit="docker.service", description="Docker Application Container Engine"
                          " (LAB STAND-IN)", daemon="/usr/bin/dockerd"),),
    ),
    StandIn(
        name="docker-ce-cli",
        versions=DOCKER_VERSIONS,
        summary="Docker CLI: the open-source application container engine",
        section="admin",
        tools={"/usr/bin/docker": "docker"},
    ),
    StandIn(
        name="apptainer",
        versions=("1.3.4", "1.3.6"),
        summary="Application and environment virtualization formerly known as Singularity",
        section="admin",
        tools={"/usr/bin/apptainer": "apptainer"},
        files={"/etc/apptainer/apptainer.conf": APPTAINER_CONF, "/etc/apptainer/nvliblist.conf": NVLIBLIST},
    ),
    # Burn-in tools (conformance --level burnin): simulated results from the twin's hardware and faults
    StandIn(name="nccl-tests", versions=("2.13.11-1",), summary="NCCL tests (all_reduce_perf, ...)",
            section="utils", depends="libnccl2", tools={"/usr/bin/all_reduce_perf": "all_reduce_perf"}),
    StandIn(name="fio", versions=("3.33-3",), summary="flexible I/O tester", section="utils",
            tools={"/usr/bin/fio": "fio"}),
    StandIn(name="perftest", versions=("4.5+0.17-1",), summary="Infiniband verbs performance tests", section="net",
            tools={"/usr/bin/ib_write_bw": "ib_write_bw", "/usr/bin/ib_read_bw": "ib_read_bw"}),
    StandIn(name="openmpi-bin", versions=("4.1.4-3+b1",), summary="high performance message passing library -- "
            "binaries", section="net", tools={"/usr/bin/mpirun": "mpirun"}),
    StandIn(
        name="linux-image-6.1.0-28-amd64",
        versions=("6.1.119-1",),
        summary="Linux 6.1 for 64-bit PCs (signed)",
        section="kernel",
        files={"/boot/config-6.1.0-28-amd64": "# LAB STAND-IN kernel config\n",
               "/boot/vmlinuz-6.1.0-28-amd64": "LAB STAND-IN: no kernel image\n"},
    ),
    StandIn(
        name="linux-image-6.1.0-27-amd64",
        versions=("6.1.115-1",),
        summary="Linux 6.1 for 64-bit PCs (signed)",
        section="kernel",
        files={"/boot/config-6.1.0-27-amd64": "# LAB STAND-IN kernel config\n",
               "/boot/vmlinuz-6.1.0-27-amd64": "LAB STAND-IN: no kernel image\n"},
    ),
)


def catalog_by_name() -> dict[str, StandIn]:
    return {p.name: p for p in CATALOG}

# The kernel a factory-fresh twin "runs" (/proc/sys/kernel/osrelease); after a reboot the twin runs the
# newest installed linux-image-* stand-in (data/tools/lab_kernel.py).
FACTORY_KERNEL = "6.1.0-27-amd64"

# What a server's factory image already has (preinstalled into the twin rootfs by install_tools):
# the boot mirror's mdadm, ZFS tools, and an older NVIDIA driver the roles will upgrade to the pin.
FACTORY_BASE: tuple[tuple[str, str], ...] = (
    ("linux-image-6.1.0-27-amd64", "6.1.115-1"),
    ("mdadm", "4.2-5"),
    ("zfsutils-linux", "2.1.11-1+deb12u1"),
)
# A GPU server's image also has an older NVIDIA driver; a server without GPUs has none (no nvidia-smi).
FACTORY_GPU: tuple[tuple[str, str], ...] = (
    ("nvidia-kernel-open-dkms", "550.90.07-1"),
    ("nvidia-driver", "550.90.07-1"),
)
FACTORY_PACKAGES: tuple[tuple[str, str], ...] = FACTORY_BASE + FACTORY_GPU
FACTORY_IMAGES: dict[str, tuple[tuple[str, str], ...]] = {"gpu": FACTORY_PACKAGES, "no-gpu": FACTORY_BASE}
