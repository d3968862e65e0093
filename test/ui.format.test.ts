/**
 * The UI's money format (ui/common.js formatCost, issue 27): what every page shows as a cost. The
 * page code is a browser module, but formatCost touches no DOM, so it is imported here as is; the
 * rendered headline is test/browser.overview.test.ts's.
 */
import fc from "fast-check";
import t from "tap";
import { formatCost } from "../ui/common.js";

t.test("dollars and cents; under a cent, two significant digits", async (t) => {
  const cases: [unknown, string][] = [
    ["73.44306485", "$73.44"], // the overview's headline as a tester saw it: $73.44306485
    ["0", "$0.00"],
    ["12", "$12.00"],
    ["1.5", "$1.50"],
    ["1234.505", "$1,234.51"], // half up, from the decimal string
    ["1234567.994", "$1,234,567.99"],
    ["0.01", "$0.01"],
    ["0.0042", "$0.0042"],
    ["0.00424999", "$0.0042"],
    ["0.00425", "$0.0043"],
    ["0.004", "$0.004"], // no trailing zero after the significant digits
    ["0.000089", "$0.000089"],
    ["0.0000021", "$0.0000021"],
    ["0.009949", "$0.0099"],
    ["0.00995", "$0.01"], // rounds up to a cent: then a cent
    ["0.995", "$1.00"],
    [0.0000021, "$0.0000021"], // an event's cost is a JSON number
    [2.1e-7, "$0.00000021"], // never in exponent notation
    [0.995, "$1.00"], // the decimal it prints as, not its binary value (0.99499…)
    [73.44306485, "$73.44"],
    [0, "$0.00"],
    ["-0.5", "-$0.50"],
    [null, "—"],
    [undefined, "—"],
  ];
  for (const [value, shown] of cases) t.equal(formatCost(value), shown, `${JSON.stringify(value)} → ${shown}`);
});

t.test("the same as Intl's en-US dollars for any amount of up to 8 decimals", async (t) => {
  const cents = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
  const small = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", maximumSignificantDigits: 2 });
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 14n }), (units) => {
      // A decimal string of 8 decimals.
      const text = units.toString().padStart(9, "0");
      const decimal = `${text.slice(0, -8)}.${text.slice(-8)}`;
      const amount = Number(decimal);
      // Away from a tie: Intl rounds the float, formatCost the digits. The digits past those kept
      // (two decimals, or two significant digits under a cent) are not a 5 and zeros.
      const fraction = text.slice(-8);
      const kept = amount >= 0.01 ? 2 : fraction.search(/[1-9]/) + 2;
      fc.pre(!/^50*$/.test(fraction.slice(kept)));
      const expected = amount === 0 || amount >= 0.01 ? cents.format(amount) : small.format(amount);
      return formatCost(decimal) === expected;
    }),
    { numRuns: 2000 },
  );
  t.pass("2000 amounts");
});
