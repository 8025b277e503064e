using Microsoft.AspNetCore.Mvc.RazorPages;

namespace RazorApp.Pages;

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
    public List<RazorApp.Scoring.Reading> Readings { get; set; } = new();
}
