//! Packets the kernel dropped in hosts' TUN queues because the engine did not read them in time:
//! losses outside the model that only the kernel's counters show.

use netloom_os::{CounterReader, DeviceCounters, OsError};

/// Each host's TUN-queue drops since the run started.
pub(crate) struct TunDrops {
    reader: CounterReader,
    /// The counters when the run started: namespaces are new, but a host may have sent before.
    baseline: Vec<DeviceCounters>,
}

impl TunDrops {
    /// Counts from the hosts' counters as they are now.
    pub fn start(reader: CounterReader) -> Result<TunDrops, OsError> {
        let baseline = reader.read()?;
        Ok(TunDrops { reader, baseline })
    }

    /// Packets each host sent that the kernel dropped because its TUN queue (the device's 500
    /// packets) was full, since `start`, in host order.
    pub fn per_host(&self) -> Result<Vec<u64>, OsError> {
        Ok(self
            .reader
            .read()?
            .iter()
            .zip(&self.baseline)
            .map(|(now, then)| now.tx_dropped.saturating_sub(then.tx_dropped))
            .collect())
    }
}
