//! Which process a request means, resolved before its work: a uid or name is asked of the
//! runtimes (as a listing does) so the work holds its process by pid.

use diagnostics_client::Endpoint;

use crate::error::ApiError;
use crate::limits::{blocking, Kind};
use crate::select::Selector;
use crate::state::AppState;

/// The process a request means: its endpoint when it was looked up (a uid or name, asked of
/// the runtimes as a listing does, under the `processes` limit), and its pid — so the work
/// that follows holds its process by pid. A pid is looked up with the work itself.
pub(super) async fn target(
    state: &AppState,
    selector: &Selector,
) -> Result<(Option<Endpoint>, u32), ApiError> {
    if let Some(pid) = selector.pid() {
        return Ok((None, pid));
    }
    let admission = state.limits.admit(Kind::Processes, None)?;
    let s = selector.clone();
    let ep = blocking(admission, move || s.resolve()).await??;
    let pid = ep.pid;
    Ok((Some(ep), pid))
}
