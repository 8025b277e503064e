//! What a built view is ([`View`]: its JSON and text views; a trace report is one) and why one
//! could not be built ([`ViewError`]). It imports no view and not the registry
//! ([`super`]), so every view can import it.

use std::io::{self, Write};

use crate::report::text::TextStyle;
use crate::report::view::{Report, ReportView};

/// A built view: its JSON and text views.
pub trait View {
    /// The JSON view.
    fn json(&self) -> serde_json::Value;
    /// The text view.
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()>;
}

impl View for Report {
    fn json(&self) -> serde_json::Value {
        ReportView::json(self.as_ref())
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        ReportView::write_text(self.as_ref(), out, style)
    }
}

/// A view that could not be built from its input, with what to try instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewError {
    /// What is wrong.
    pub message: String,
    /// What to try, when something can be said.
    pub hint: Option<String>,
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ViewError {}
