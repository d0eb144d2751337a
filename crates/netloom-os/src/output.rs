//! Files netloom writes where a user said (`capture -w FILE`, `run --router-logs DIR`), as root,
//! opened so that a symbolic link planted there is refused, never followed, and a file is never
//! written through another of its names.

use crate::error::OsError;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Opens `path` for writing, made if missing (0666 less the umask) but not yet emptied: a
/// symbolic link there is refused (O_NOFOLLOW), and so is a regular file with other hard links,
/// since another user could have made either point at a file of root's. A device or a FIFO
/// (`/dev/null`, `/dev/full`, a pipe to tshark) is written as it is.
pub fn open_output(path: &Path) -> Result<OutputFile, OsError> {
    let open = |create: bool| {
        let mut options = std::fs::OpenOptions::new();
        options
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        match create {
            true => options.create_new(true),
            false => options.create(false),
        };
        options.open(path)
    };
    // Made new, or there already: only a file made here is removed when the caller gives up.
    let (file, created) = match open(true) {
        Ok(file) => (file, true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            (open(false).map_err(|e| refused(path, e))?, false)
        }
        Err(e) => return Err(refused(path, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| OsError::io(format!("inspect {}", path.display()), e))?;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(planted(path, &format!("has {} hard links", meta.nlink())));
    }
    Ok(OutputFile {
        file,
        created,
        regular: meta.is_file(),
        path: path.to_path_buf(),
    })
}

/// Writes `bytes` to `path` as `open_output` opens it (a planted link refused, a regular file
/// replaced in place); a file it made is removed again if the write fails (a full disk), so a
/// half-written report is never left behind.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), OsError> {
    use std::io::Write;
    let output = open_output(path)?;
    let created = output.created;
    let written = output.begin().and_then(|mut file| {
        file.write_all(bytes)
            .and_then(|()| file.flush())
            .map_err(|e| OsError::io(format!("write {}", path.display()), e))
    });
    if written.is_err() && created {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// A file `open_output` opened, not yet written.
#[derive(Debug)]
pub struct OutputFile {
    file: File,
    created: bool,
    regular: bool,
    path: PathBuf,
}

impl OutputFile {
    /// The file to write from its start: a regular file is emptied, a device or a FIFO left as
    /// it is.
    pub fn begin(self) -> Result<File, OsError> {
        if self.regular {
            self.file
                .set_len(0)
                .map_err(|e| OsError::io(format!("empty {}", self.path.display()), e))?;
        }
        Ok(self.file)
    }

    /// Gives up before writing: a file `open_output` made is removed; anything that was there
    /// (a user's file, `/dev/null`) is left as it was.
    pub fn abandon(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A directory netloom writes files into, held open: every file and directory below it is
/// made relative to this handle (openat), so neither it nor any directory below can be swapped
/// for a symbolic link between a check and a write.
#[derive(Debug)]
pub struct OutputDir {
    dir: File,
    path: PathBuf,
}

impl OutputDir {
    /// Opens directory `path`, made (0755) if missing. A symbolic link there is refused.
    pub fn open(path: &Path) -> Result<OutputDir, OsError> {
        match std::fs::DirBuilder::new().create(path) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                return Err(OsError::io(format!("create {}", path.display()), e))
            }
            _ => {}
        }
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| refused(path, e))?;
        Ok(OutputDir {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// The directory's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `name` inside this one, made (0755) if missing; a symbolic link there is
    /// refused.
    pub fn subdir(&self, name: &OsStr) -> Result<OutputDir, OsError> {
        let path = self.path.join(name);
        let c = component(name, &path)?;
        // SAFETY: `self.dir` is an open directory and `c` a NUL-terminated single component.
        if unsafe { libc::mkdirat(self.dir.as_raw_fd(), c.as_ptr(), 0o755) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(OsError::io(format!("create {}", path.display()), e));
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let dir = self.open_at(&c, flags, 0).map_err(|e| refused(&path, e))?;
        Ok(OutputDir { dir, path })
    }

    /// Creates file `name` in this directory, new (0644): a regular file there is replaced (its
    /// name removed, never written through, so another hard link to it is untouched); a
    /// symbolic link or anything else there is refused.
    pub fn create(&self, name: &OsStr) -> Result<File, OsError> {
        let path = self.path.join(name);
        let c = component(name, &path)?;
        // SAFETY: an all-zero stat is a valid value for fstatat to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `self.dir` is an open directory, `c` NUL-terminated, `st` a live stat.
        let found = unsafe {
            libc::fstatat(
                self.dir.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        } == 0;
        if found {
            match st.st_mode & libc::S_IFMT {
                libc::S_IFREG => {
                    // SAFETY: as for fstatat; unlinkat removes the name, never what it points to.
                    if unsafe { libc::unlinkat(self.dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
                        return Err(OsError::last(format!("remove the old {}", path.display())));
                    }
                }
                libc::S_IFLNK => return Err(planted(&path, "is a symbolic link")),
                _ => return Err(planted(&path, "is not a regular file")),
            }
        }
        // O_EXCL: a name planted again since the check fails here rather than being followed.
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        self.open_at(&c, flags, 0o644).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => planted(&path, "appeared while it was written"),
            _ => OsError::io(format!("create {}", path.display()), e),
        })
    }

    fn open_at(&self, name: &CString, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
        // SAFETY: `self.dir` is an open directory and `name` NUL-terminated; the mode is read
        // only with O_CREAT.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                name.as_ptr(),
                flags,
                libc::c_uint::from(mode),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }
}

/// `name` as one path component for the *at calls: no slash, not `.` or `..`, no NUL.
fn component(name: &OsStr, path: &Path) -> Result<CString, OsError> {
    let bytes = name.as_bytes();
    let single = !bytes.is_empty() && !bytes.contains(&b'/') && bytes != b"." && bytes != b"..";
    match CString::new(bytes) {
        Ok(c) if single => Ok(c),
        _ => Err(OsError::io(
            format!("write {}", path.display()),
            io::Error::new(io::ErrorKind::InvalidInput, "not a single file name"),
        )),
    }
}

fn planted(path: &Path, reason: &str) -> OsError {
    OsError::Planted {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The error of an open with O_NOFOLLOW: ELOOP (or ENOTDIR for a directory) when the last
/// component is a symbolic link.
fn refused(path: &Path, e: io::Error) -> OsError {
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match link {
        true => planted(path, "is a symbolic link"),
        false => OsError::io(format!("open {}", path.display()), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("netloom-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn links_are_refused_and_what_they_point_to_is_untouched() {
        let dir = scratch("links");
        let precious = dir.join("precious");
        std::fs::write(&precious, "precious\n").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let hard = dir.join("hard");
        std::fs::hard_link(&precious, &hard).unwrap();
        for path in [&link, &hard] {
            let err = open_output(path).unwrap_err().to_string();
            assert!(err.contains("does not write through it"), "{err}");
        }
        // A directory that is a link, and a file in a real one that is a link.
        let real = dir.join("real");
        std::fs::create_dir(&real).unwrap();
        let linked = dir.join("linked");
        std::os::unix::fs::symlink(&real, &linked).unwrap();
        assert!(matches!(
            OutputDir::open(&linked),
            Err(OsError::Planted { .. })
        ));
        let out = OutputDir::open(&dir.join("out")).unwrap();
        std::fs::create_dir(dir.join("out").join("r1")).unwrap();
        std::os::unix::fs::symlink(&precious, dir.join("out/r1/frr.log")).unwrap();
        std::os::unix::fs::symlink(&real, dir.join("out/r2")).unwrap();
        let r1 = out.subdir(OsStr::new("r1")).unwrap();
        assert!(matches!(
            r1.create(OsStr::new("frr.log")),
            Err(OsError::Planted { .. })
        ));
        assert!(matches!(
            out.subdir(OsStr::new("r2")),
            Err(OsError::Planted { .. })
        ));
        // A hard link in the directory is replaced, not written through.
        std::fs::hard_link(&precious, dir.join("out/r1/bird.log")).unwrap();
        let mut f = r1.create(OsStr::new("bird.log")).unwrap();
        io::Write::write_all(&mut f, b"new\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("out/r1/bird.log")).unwrap(),
            "new\n"
        );
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
        // A file of one's own is emptied once begun, and left as it was when abandoned; a file
        // made here is removed when abandoned.
        let mine = dir.join("mine");
        std::fs::write(&mine, "old contents").unwrap();
        open_output(&mine).unwrap().abandon();
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "old contents");
        io::Write::write_all(&mut open_output(&mine).unwrap().begin().unwrap(), b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "x");
        let new = dir.join("new");
        open_output(&new).unwrap().abandon();
        assert!(!new.exists());
        // A device is written as it is, and never removed.
        open_output(Path::new("/dev/null")).unwrap().abandon();
        assert!(Path::new("/dev/null").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_output_refuses_links_and_leaves_no_half_file() {
        let dir = scratch("write");
        let precious = dir.join("precious");
        std::fs::write(&precious, "precious\n").unwrap();
        let link = dir.join("report.json");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let err = write_output(&link, b"{}").unwrap_err().to_string();
        assert!(err.contains("does not write through it"), "{err}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
        // A shorter text replaces a longer one whole.
        let mine = dir.join("mine");
        std::fs::write(&mine, "a much longer old text").unwrap();
        write_output(&mine, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "new");
        // A full disk: the error names the file, and nothing is written through /dev/full.
        let err = write_output(Path::new("/dev/full"), b"x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/dev/full"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
