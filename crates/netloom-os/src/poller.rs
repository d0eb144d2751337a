//! `Poller`: epoll over the TUN descriptors with a nanosecond timeout, so the real-time driver
//! can sleep until its next deadline or until a host sends.

use crate::OsError;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// Level-triggered readiness of registered descriptors, each known by a caller's token.
#[derive(Debug)]
pub struct Poller {
    epoll: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// Whether the kernel has epoll_pwait2 (Linux 5.11+), whose timeout is in nanoseconds.
    precise: bool,
}

impl Poller {
    /// An epoll instance with nothing registered. Probes once whether the kernel has
    /// epoll_pwait2; without it `precise` is false and timeouts fall back to milliseconds.
    pub fn new() -> Result<Poller, OsError> {
        // SAFETY: epoll_create1 has no memory preconditions.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(OsError::last("create an epoll instance"));
        }
        // SAFETY: `raw` was just returned by epoll_create1 and is owned by nobody else.
        let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut poller = Poller {
            epoll,
            events: vec![libc::epoll_event { events: 0, u64: 0 }],
            precise: true,
        };
        // Probe once with a zero timeout; ENOSYS means an older kernel.
        if let Err(err) = poller.pwait2(Some(Duration::ZERO)) {
            if err.raw_os_error() != Some(libc::ENOSYS) {
                return Err(OsError::io("probe epoll_pwait2", err));
            }
            poller.precise = false;
        }
        Ok(poller)
    }

    /// Registers `fd` for readability under `token`. The descriptor must stay open while
    /// registered (the kernel drops it from the set when it is closed).
    pub fn add(&mut self, fd: BorrowedFd, token: u32) -> Result<(), OsError> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: u64::from(token),
        };
        // SAFETY: `event` is a live epoll_event; both descriptors are open.
        let rc = unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut event,
            )
        };
        if rc != 0 {
            return Err(OsError::last(format!(
                "add descriptor {} to epoll",
                fd.as_raw_fd()
            )));
        }
        self.events.push(libc::epoll_event { events: 0, u64: 0 });
        Ok(())
    }

    /// Stops watching `fd` (registered with `add`).
    pub fn remove(&mut self, fd: BorrowedFd) -> Result<(), OsError> {
        // SAFETY: both descriptors are open; EPOLL_CTL_DEL ignores the event pointer.
        let rc = unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd.as_raw_fd(),
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(OsError::last(format!(
                "remove descriptor {} from epoll",
                fd.as_raw_fd()
            )));
        }
        if self.events.len() > 1 {
            self.events.pop();
        }
        Ok(())
    }

    /// Whether `wait` honours nanosecond timeouts. If not, a timeout is rounded down to whole
    /// milliseconds and the caller spins for the rest.
    pub fn precise(&self) -> bool {
        self.precise
    }

    /// Waits until a registered descriptor is readable or `timeout` passes (`None`: forever),
    /// and puts the tokens of the readable ones into `ready` (cleared first). May return early
    /// with `ready` empty: on a signal, or at the rounded-down timeout of `epoll_wait`.
    pub fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> Result<(), OsError> {
        ready.clear();
        let result = if self.precise {
            self.pwait2(timeout)
        } else {
            self.wait_ms(timeout)
        };
        let n = match result {
            Ok(n) => n,
            Err(err) if err.raw_os_error() == Some(libc::EINTR) => 0,
            Err(err) => return Err(OsError::io("wait for TUN devices (epoll)", err)),
        };
        // The fields are copied out by value: epoll_event is packed on x86-64.
        ready.extend(self.events[..n].iter().map(|event| {
            let token = event.u64;
            token as u32
        }));
        Ok(())
    }

    fn pwait2(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let spec = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let spec_ptr = spec
            .as_ref()
            .map_or(std::ptr::null(), |s| s as *const libc::timespec);
        // SAFETY: `events` has room for `events.len()` entries; the timeout is null or a live
        // timespec; a null signal mask means "leave the mask alone", so its size is unused.
        // Called through syscall() because glibc before 2.35 has no wrapper.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.epoll.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                spec_ptr,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn wait_ms(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as libc::c_int);
        // SAFETY: `events` has room for `events.len()` entries.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                ms,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::time::Instant;

    #[test]
    fn reports_readable_tokens_and_honours_short_timeouts() {
        let (a, b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        let mut poller = Poller::new().unwrap();
        poller.add(b.as_fd(), 7).unwrap();
        let mut ready = Vec::new();
        let start = Instant::now();
        poller
            .wait(Some(Duration::from_micros(200)), &mut ready)
            .unwrap();
        assert!(ready.is_empty());
        assert!(start.elapsed() < Duration::from_millis(50));
        a.send(b"x").unwrap();
        poller.wait(None, &mut ready).unwrap();
        assert_eq!(ready, [7]);
    }
}
