package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/leasetop/leasetop/monitor"
)

// Program is the monitor on a store as Run runs it, built but not started:
// the model, the feed that keeps the model's state true, and the Bubble Tea
// options. Run is NewProgram followed by Program.Run; a caller that must run
// exactly that program with something around the model (the benchmark times
// every frame) builds one itself.
type Program struct {
	model *Model
	feed  interface {
		Start(context.Context) (stop func())
	} // a *monitor.Feed, or a *monitor.Feeds of several databases
	options []tea.ProgramOption
}

// NewProgram builds the monitor on opt.Store (or its Config.Contexts) as Run
// does, without starting anything. ctx bounds the database calls the model
// makes (a session's history, a forced release).
func NewProgram(ctx context.Context, opt Options) (*Program, error) {
	cfg := opt.Config
	var p Program
	switch {
	case len(cfg.Contexts) > 0 && opt.Store != nil:
		return nil, errors.New("ui: a store and contexts: give one or the other")
	case len(cfg.Contexts) > monitor.MaxContexts:
		return nil, fmt.Errorf("ui: %d contexts, at most %d", len(cfg.Contexts), monitor.MaxContexts)
	case len(cfg.Contexts) > 0:
		cfg.Contexts = slices.Clone(cfg.Contexts)
		ctxs := make([]monitor.Context, len(cfg.Contexts))
		cfg.State.Contexts = make([]string, len(cfg.Contexts))
		for i, c := range cfg.Contexts {
			cfg.Contexts[i].ReadOnly = c.ReadOnly || cfg.ReadOnly
			ctxs[i], cfg.State.Contexts[i] = c.Context, c.Name
		}
		feeds := monitor.NewFeeds(ctxs)
		cfg.Source, p.feed = contextsSource(ctx, feeds, cfg.Contexts, opt.HistoryLimit), feeds
	case opt.Store != nil:
		feed := monitor.NewFeed(opt.Store, opt.Feed)
		cfg.Source, p.feed = storeSource(ctx, opt.Store, feed, opt.ReadOnly, opt.HistoryLimit), feed
		if cfg.Database == "" {
			cfg.Database = DatabaseLabel(opt.Store)
		}
	default:
		return nil, errors.New("ui: no store")
	}
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	popts := []tea.ProgramOption{tea.WithFPS(FrameRate)}
	if opt.Input != nil {
		popts = append(popts, tea.WithInput(opt.Input))
	}
	if opt.Output != nil {
		popts = append(popts, tea.WithOutput(opt.Output))
	}
	if opt.Environ != nil {
		popts = append(popts, tea.WithEnvironment(opt.Environ))
	}
	if opt.NoColor {
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	if opt.NoSignalHandler {
		popts = append(popts, tea.WithoutSignalHandler())
	}
	p.model, p.options = m, popts
	return &p, nil
}

// Model returns the monitor's model.
func (p *Program) Model() *Model { return p.model }

// Run starts the feed, runs the program on model until the user quits or ctx
// ends (then it returns nil), and stops the feed before it returns. model is
// Model() or a wrapper that hands every message and View on to it; extra
// Bubble Tea options apply after the monitor's own (a fixed window size, no
// signal handler). A Program runs once.
func (p *Program) Run(ctx context.Context, model tea.Model, extra ...tea.ProgramOption) error {
	stop := p.feed.Start(ctx)
	defer stop()
	opts := append([]tea.ProgramOption{tea.WithContext(ctx)}, p.options...)
	_, err := tea.NewProgram(model, append(opts, extra...)...).Run()
	switch {
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil: // ctx ended
		return nil
	case errors.Is(err, tea.ErrInterrupted): // SIGINT from outside the terminal: like q
		return nil
	}
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	return nil
}
