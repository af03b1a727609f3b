// SPDX-License-Identifier: Apache-2.0

// Command ember-test-otelcol is a minimal OpenTelemetry Collector for ember's
// interop tests: what the collector builder (ocb v0.165.0) would generate for
// one receiver (otlp) and three exporters (otlp, otlphttp, debug), written by
// hand so that no generator has to run in CI.
package main

import (
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	var err error
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](
		otlpreceiver.NewFactory(),
	); err != nil {
		return f, err
	}
	f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		otlpexporter.NewFactory(),
		otlphttpexporter.NewFactory(),
		debugexporter.NewFactory(),
	)
	return f, err
}

func main() {
	// A profiles pipeline is refused unless this alpha gate is on. This binary
	// exists to carry profiles, so it is on by default here; the usual
	// --feature-gates flag is still read after this and can turn it off.
	if err := featuregate.GlobalRegistry().Set("service.profilesSupport", true); err != nil {
		panic(err)
	}
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "ember-test-otelcol",
			Description: "OpenTelemetry Collector for ember's interop tests",
			Version:     "0.165.0",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(),
					envprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
	}
	// cobra has already printed the error.
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		os.Exit(1)
	}
}
