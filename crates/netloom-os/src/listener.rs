//! Ends a blocking `accept` on a listening socket from another thread (`shutdown`, which std
//! offers for connected streams only): a server that wakes its accepting thread by connecting
//! to its own socket file hangs when that file is gone, and a run's directory can be removed
//! under it.

use crate::OsError;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Shuts down the listening socket `socket` both ways: an `accept` blocked on it returns an
/// error at once, and every later one too.
pub fn shut_down_listener(socket: BorrowedFd<'_>) -> Result<(), OsError> {
    // SAFETY: `shutdown` takes a descriptor and a constant; `socket` is open for the call.
    let rc = unsafe { libc::shutdown(socket.as_raw_fd(), libc::SHUT_RDWR) };
    if rc != 0 {
        return Err(OsError::io(
            "shut down a listening socket",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixListener;
    use std::time::{Duration, Instant};

    #[test]
    fn a_blocked_accept_returns_once_its_socket_is_shut_down_even_without_its_file() {
        let dir = std::env::temp_dir().join(format!("netloom-listener-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let listener = UnixListener::bind(dir.join("s")).unwrap();
        let clone = listener.try_clone().unwrap();
        let accepting = std::thread::spawn(move || clone.accept().is_err());
        std::thread::sleep(Duration::from_millis(50));
        std::fs::remove_dir_all(&dir).unwrap();
        let start = Instant::now();
        shut_down_listener(listener.as_fd()).unwrap();
        assert!(accepting.join().unwrap(), "accept failed once shut down");
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
