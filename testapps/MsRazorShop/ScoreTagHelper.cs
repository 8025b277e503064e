using Microsoft.AspNetCore.Razor.TagHelpers;
using Microsoft.Samples.RazorShop.Scoring;

namespace Microsoft.Samples.RazorShop.TagHelpers;

/// `<score readings="..."/>`: the row's best sensor, ranked by the app's Ranker.
[HtmlTargetElement("score")]
public sealed class ScoreTagHelper : TagHelper
{
    public List<Reading> Readings { get; set; } = new();

    public override Task ProcessAsync(TagHelperContext context, TagHelperOutput output)
    {
        var ranked = new Ranker<string, Reading>(r => r.Sensor).Rank(Readings, r => r.Value);
        var best = ranked.OrderByDescending(kv => kv.Value.Sum(p => p.Value)).First();
        output.TagName = "span";
        output.Content.SetContent($"{best.Key}: {best.Value.Count}");
        return Task.CompletedTask;
    }
}
