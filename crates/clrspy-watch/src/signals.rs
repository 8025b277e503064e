//! The process's signals as requests to the watcher: SIGINT and SIGTERM stop it (open traces
//! are finished whole; a second one stops waiting for their rundowns), SIGHUP reloads its
//! rules.

use crate::WatchControl;

/// The control the signal handlers set.
static BY_SIGNALS: WatchControl = WatchControl::new();

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics: safe in a signal handler.
    if sig == libc::SIGHUP {
        BY_SIGNALS.request_reload();
    } else {
        BY_SIGNALS.request_stop();
    }
}

/// Installs the handlers of SIGINT, SIGTERM and SIGHUP and returns the control they set, for
/// [`watch`](crate::watch).
pub fn signal_control() -> &'static WatchControl {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only touches atomics; signal(2) with a valid signal number.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    &BY_SIGNALS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sighup_asks_for_a_reload_and_sigterm_for_a_stop() {
        let control = signal_control();
        assert!(!control.reload_requested());
        // SAFETY: raising a signal whose handler was installed above.
        unsafe {
            libc::raise(libc::SIGHUP);
        }
        assert!(control.reload_requested());
        assert_eq!(control.stops(), 0);
        // SAFETY: as above.
        unsafe {
            libc::raise(libc::SIGTERM);
        }
        assert_eq!(control.stops(), 1);
    }
}
