package norm_test

import (
	"fmt"

	"github.com/webstats/webstats/engine/internal/norm"
)

func ExampleDomain() {
	for _, s := range []string{"https://www.Example.com/", "Bücher.de", "example.com/path", "256.1.1.1"} {
		d, ok := norm.Domain(s)
		fmt.Printf("%q %v\n", d, ok)
	}
	// Output:
	// "example.com" true
	// "xn--bcher-kva.de" true
	// "" false
	// "" false
}

func ExampleParsePage() {
	rules := norm.ParsePageRules("utm_source\nutm_campaign")
	p, ok := norm.ParsePage("https://www.example.com/pricing?utm_source=news&plan=pro&utm_campaign=spring#faq", rules)
	fmt.Println(ok, p.Host, p.Page, p.Campaign)
	// Output: true example.com /pricing?plan=pro spring
}

func ExampleEventRow() {
	name, _ := norm.EventName("Payment")
	fmt.Println(norm.EventRow(name, norm.EventValue([]byte("5.0")), norm.EventUnit("USD")))
	// Output: Payment:5:USD
}
