//! `top`'s full-screen view: the alternate screen in raw mode, redrawn each refresh and on
//! every key, and the terminal restored on every way out — `q`, Ctrl+C (a key in raw mode),
//! the target's exit, an error (the guard's drop) and a panic (a hook that restores first).

use std::io::{stdout, Stdout};
use std::sync::Once;
use std::time::{Duration, Instant};

use clrspy_live::top::{Mode, TopTable};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::layout::{Alignment, Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::{Frame, Terminal};

use super::live::{Live, ViewState};
use super::text::{cells, figures, showing, titles, KEYS};

/// Puts the terminal back as it was: cooked mode, the main screen, the cursor shown. Safe to
/// call more than once.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), LeaveAlternateScreen, cursor::Show);
}

/// While it lives, the terminal is in the full-screen view's state.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                // The message would be lost on the alternate screen, and the shell unusable.
                restore();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        let entered = execute!(stdout(), EnterAlternateScreen, cursor::Hide)
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match entered {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// What a key asks for.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    Quit,
    Redraw,
    Ignore,
}

/// Applies a key to the view.
fn on_key(k: KeyEvent, state: &mut ViewState) -> Key {
    if k.kind != KeyEventKind::Press {
        return Key::Ignore;
    }
    match k.code {
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => return Key::Quit,
        KeyCode::Char('q') | KeyCode::Esc => return Key::Quit,
        KeyCode::Char('c') => state.mode = Mode::Cpu,
        KeyCode::Char('w') => state.mode = Mode::Wait,
        KeyCode::Char('a') => {
            state.mode = if state.mode == Mode::AllocByMethod {
                Mode::AllocByType
            } else {
                Mode::AllocByMethod
            }
        }
        KeyCode::Char('s') | KeyCode::Tab => state.sort = state.sort.next(),
        KeyCode::Char('p') | KeyCode::Char(' ') => state.paused = !state.paused,
        _ => return Key::Ignore,
    }
    Key::Redraw
}

/// Runs the view until `q`, Ctrl+C or the session's end.
pub(super) fn run(live: &Live, state: &mut ViewState) -> std::io::Result<()> {
    let mut screen = Screen::enter()?;
    let mut next = Instant::now();
    let mut table = TopTable::default();
    let mut title = live.title();
    loop {
        if live.ended() || clrspy_cli::interrupted() {
            return Ok(());
        }
        if Instant::now() >= next {
            // A refresh slower than the interval (a big process) is not made up for.
            next += state.refresh;
            if next < Instant::now() {
                next = Instant::now() + state.refresh;
            }
            state.refresh(live);
            table = state.window.table(state.mode, state.sort);
            title = live.title();
        }
        screen.terminal.draw(|f| draw(f, &title, &table, state))?;
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(250));
        if event::poll(wait)? {
            match event::read()? {
                Event::Key(k) => match on_key(k, state) {
                    Key::Quit => return Ok(()),
                    Key::Redraw => table = state.window.table(state.mode, state.sort),
                    Key::Ignore => {}
                },
                Event::Resize(..) => screen.terminal.autoresize()?,
                _ => {}
            }
        }
    }
}

/// Draws a frame: two header lines, the table, the keys.
fn draw(f: &mut Frame<'_>, title: &str, table: &TopTable, state: &ViewState) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let paused = if state.paused { "  [paused]" } else { "" };
    let first = format!(
        "clrspy top: {title}  window {} s, refresh {} s{paused}",
        state.window_len.as_secs_f64(),
        state.refresh.as_secs_f64()
    );
    let second = format!(
        "{}  [{}]",
        figures(&table.header, state.threads),
        showing(state.mode, state.sort)
    );
    f.render_widget(
        Paragraph::new(vec![
            Line::from(first).style(Style::new().add_modifier(Modifier::BOLD)),
            Line::from(second),
        ]),
        head,
    );
    let bold = Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED);
    // Figures right-aligned, the name left.
    let row = |c: [String; 5]| {
        Row::new(c.into_iter().enumerate().map(|(i, s)| {
            let align = if i < 4 {
                Alignment::Right
            } else {
                Alignment::Left
            };
            Cell::from(Line::from(s).alignment(align))
        }))
    };
    let header = row(titles(state.mode).map(String::from)).style(bold);
    let rows: Vec<Row<'_>> = if table.rows.is_empty() {
        vec![Row::new(["", "", "", "", "(nothing in the window yet)"])]
    } else {
        table
            .rows
            .iter()
            .take(usize::from(body.height))
            .map(|r| row(cells(state.mode, r)))
            .collect()
    };
    let widths = [
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Fill(1),
    ];
    f.render_widget(
        Table::new(rows, widths).header(header).column_spacing(2),
        body,
    );
    f.render_widget(Paragraph::new(KEYS), foot);
}

#[cfg(test)]
mod tests {
    use clrspy_live::top::SortBy;

    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_switch_mode_sort_and_pause_and_quit() {
        let second = Duration::from_secs(1);
        let mut s = ViewState::new(Mode::Cpu, SortBy::Exclusive, second, 5 * second);
        let none = KeyModifiers::NONE;
        assert_eq!(on_key(key(KeyCode::Char('w'), none), &mut s), Key::Redraw);
        assert_eq!(s.mode, Mode::Wait);
        on_key(key(KeyCode::Char('a'), none), &mut s);
        assert_eq!(s.mode, Mode::AllocByMethod);
        on_key(key(KeyCode::Char('a'), none), &mut s);
        assert_eq!(s.mode, Mode::AllocByType);
        on_key(key(KeyCode::Char('c'), none), &mut s);
        assert_eq!(s.mode, Mode::Cpu);
        on_key(key(KeyCode::Tab, none), &mut s);
        assert_eq!(s.sort, SortBy::Inclusive);
        on_key(key(KeyCode::Char('s'), none), &mut s);
        assert_eq!(s.sort, SortBy::Exclusive);
        on_key(key(KeyCode::Char(' '), none), &mut s);
        assert!(s.paused);
        on_key(key(KeyCode::Char('p'), none), &mut s);
        assert!(!s.paused);
        assert_eq!(on_key(key(KeyCode::Char('x'), none), &mut s), Key::Ignore);
        assert_eq!(on_key(key(KeyCode::Char('q'), none), &mut s), Key::Quit);
        assert_eq!(
            on_key(key(KeyCode::Char('c'), KeyModifiers::CONTROL), &mut s),
            Key::Quit
        );
        // A release is not a press.
        let mut release = key(KeyCode::Char('q'), none);
        release.kind = KeyEventKind::Release;
        assert_eq!(on_key(release, &mut s), Key::Ignore);
    }
}
