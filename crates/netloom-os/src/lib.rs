//! netloom's OS edge: network namespaces, TUN devices, netfilter queues, raw sockets, epoll, CPU placement, keeping CPUs awake
//! and the registry of running experiments. Every `unsafe` block and every syscall of the project
//! lives in this crate; the engine above it only sees file descriptors, packets and plain data.
//!
//! Linux only, and most of it needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).

mod address;
mod awake;
mod cgroup;
mod child;
mod cleanup;
mod cpu;
mod error;
mod exec;
mod host_cpu;
mod interface;
mod listener;
mod netlink;
mod netns;
mod nfqueue;
mod output;
mod parallel;
mod peer;
mod plan;
mod poller;
mod raw;
mod realtime;
mod registry;
mod router;
mod signal;
mod sockdiag;
mod sysctl;
mod tcp;
mod testbed;
mod tun;

pub use address::{
    AddressError, AddressPlan, IPV6_PREFIX_LEN, MAX_IPV4_PREFIX_LEN, MIN_IPV4_PREFIX_LEN,
};
pub use awake::KeepAwake;
pub use cgroup::{cgroup2_mount, cgroup_of, cgroup_tree};
pub use child::{die_with_parent, set_receive_buffer};
pub use cleanup::{clean, stop, terminate, CleanReport};
pub use cpu::{
    allowed_cpus, cpu_caches, format_cpu_list, machine_cpus, parse_cpu_list, pin_current_thread,
    pin_current_thread_to, prefetch, set_nice, set_normal_priority, set_realtime_priority,
    set_timer_slack_ns, CpuCache,
};
pub use error::OsError;
pub use exec::{
    close_inherited_fds, command, command_with_bind, exec, exec_with_bind, wait_in_foreground,
};
pub use host_cpu::{host_cgroup, CPU_PERIOD_US};
pub use interface::DeviceCounters;
pub use listener::shut_down_listener;
pub use netns::{enter as enter_namespace, enter_file as enter_namespace_file};
pub use nfqueue::{NfQueue, QueuedPacket, Verdict, VerdictStats};
pub use output::{open_output, write_output, OutputDir, OutputFile};
pub use peer::{effective_uid, peer_credentials, primary_group, PeerCredentials};
pub use plan::{
    check_experiment_name, check_host_name, namespace_name, DEFAULT_MTU, MAX_MTU, MIN_MTU,
};
pub use poller::Poller;
pub use raw::RawSender;
pub use registry::{create_log, find_host, log_path, registry_dir, running, Record, RecordHost};
pub use router::{
    device_names, link_local, KernelInterface, KernelRouterSpec, StaticRoute, MAX_DEVICE_NAME,
};
pub use signal::{install_stop_handler, restore_default_sigpipe};
pub use sockdiag::{SocketOwner, SocketTable};
pub use tcp::{available_congestion_controls, DEFAULT_CONGESTION_CONTROL};
pub use testbed::{CounterReader, HostSpec, RouterSpec, Testbed, TestbedSpec};
pub use tun::{Tun, TUN_NAME, VNET_HDR_LEN};
