//! Mapped segments survive another program truncating their file.
//!
//! Reading a page of a memory map past the end of its (now shorter) file
//! raises `SIGBUS`, whose default action kills the process. baton never
//! writes a segment file after it is renamed into place, but anything
//! running as the same user can truncate one. So every mapped segment's
//! address range is registered here, and a `SIGBUS` handler (installed with
//! the first registration) that finds the faulting address in a registered
//! range maps a page of zeros over the faulting page and returns: the read
//! is repeated and sees zeros, which the segment readers treat like any
//! other damaged bytes (bounds-checked, never trusted). The handler records
//! the damage; the service then reloads its index from disk (a truncated
//! segment fails its header check there and the manual is indexed again).
//! A fault outside every registered range goes to the handler that was
//! there before (Rust's stack-overflow report) or the default action.

#[cfg(unix)]
mod imp {
    use std::sync::Once;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Registered ranges at most (segments mapped at once; more are left
    /// unguarded, which is what every mapping was before).
    const SLOTS: usize = 1024;

    #[allow(
        clippy::declare_interior_mutable_const,
        reason = "initialises the statics"
    )]
    const EMPTY: AtomicUsize = AtomicUsize::new(0);
    static STARTS: [AtomicUsize; SLOTS] = [EMPTY; SLOTS];
    static LENS: [AtomicUsize; SLOTS] = [EMPTY; SLOTS];
    static DAMAGED: AtomicBool = AtomicBool::new(false);
    static INSTALL: Once = Once::new();
    /// The previous `SIGBUS` action, written once before ours is installed.
    static mut PREVIOUS: Option<libc::sigaction> = None;

    fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .unwrap_or(4096)
            .max(1)
    }

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        for i in 0..SLOTS {
            let start = STARTS[i].load(Ordering::Acquire);
            let len = LENS[i].load(Ordering::Acquire);
            if start != 0 && addr >= start && addr < start + len {
                let page = addr & !(page_size() - 1);
                // SAFETY: the page lies inside a live read-only mapping of
                // ours; replacing it with zeros (MAP_FIXED) changes only what
                // that mapping reads. mmap is a plain system call.
                let mapped = unsafe {
                    libc::mmap(
                        page as *mut libc::c_void,
                        page_size(),
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if mapped != libc::MAP_FAILED {
                    DAMAGED.store(true, Ordering::Release);
                    return;
                }
                break;
            }
        }
        // Not ours: hand it to whoever was there before, or die as before.
        // SAFETY: PREVIOUS was written before this handler was installed
        // and never after.
        let previous = unsafe { *std::ptr::addr_of!(PREVIOUS) };
        match previous {
            Some(old)
                if old.sa_sigaction != libc::SIG_DFL
                    && old.sa_sigaction != libc::SIG_IGN
                    && old.sa_flags & libc::SA_SIGINFO != 0 =>
            {
                // SAFETY: a SA_SIGINFO handler has this signature.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(old.sa_sigaction) };
                f(sig, info, ctx);
            }
            _ => {
                // SAFETY: restoring the default action; the faulting access
                // is repeated on return and ends the process as it would have.
                unsafe {
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
                }
            }
        }
    }

    fn install() {
        INSTALL.call_once(|| {
            // SAFETY: plain sigaction calls; PREVIOUS is written before the
            // handler that reads it exists.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0 {
                    *std::ptr::addr_of_mut!(PREVIOUS) = Some(old);
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
            }
        });
    }

    /// Guards `len` bytes mapped at `start`; returns the slot to release.
    pub(crate) fn register(start: usize, len: usize) -> Option<usize> {
        if start == 0 || len == 0 {
            return None;
        }
        install();
        for i in 0..SLOTS {
            if STARTS[i]
                .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                LENS[i].store(len, Ordering::Release);
                STARTS[i].store(start, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    /// Stops guarding a slot (before its mapping goes away).
    pub(crate) fn release(slot: usize) {
        if slot < SLOTS {
            LENS[slot].store(0, Ordering::Release);
            STARTS[slot].store(0, Ordering::Release);
        }
    }

    /// Whether a mapped segment was found damaged since the last call.
    pub(crate) fn take_damaged() -> bool {
        DAMAGED.swap(false, Ordering::AcqRel)
    }

    /// Whether a mapped segment was found damaged (the flag stays).
    pub(crate) fn is_damaged() -> bool {
        DAMAGED.load(Ordering::Acquire)
    }
}

#[cfg(not(unix))]
mod imp {
    pub(crate) fn register(_start: usize, _len: usize) -> Option<usize> {
        None
    }
    pub(crate) fn release(_slot: usize) {}
    pub(crate) fn take_damaged() -> bool {
        false
    }
    pub(crate) fn is_damaged() -> bool {
        false
    }
}

pub(crate) use imp::{is_damaged, register, release, take_damaged};
