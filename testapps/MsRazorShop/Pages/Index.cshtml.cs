using Microsoft.AspNetCore.Mvc.RazorPages;

namespace Microsoft.Samples.RazorShop.Pages;

public class IndexModel : PageModel
{
    public void OnGet()
    {
    }
}

public class RowModel
{
    public int Id { get; set; }
    public string Name { get; set; } = "";
    public List<Microsoft.Samples.RazorShop.Scoring.Reading> Readings { get; set; } = new();
}
